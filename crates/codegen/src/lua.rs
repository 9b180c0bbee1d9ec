//! Just enough of Lua 5.1 to check a script body against its header: a
//! tokenizer (comments and long strings skipped, string literals decoded)
//! and the block structure (`if` arms, loops, functions, `return`s) that
//! tells which `redis.call`s may run after a write.

/// One token of a body.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A name or a keyword.
    Name(String),
    /// A string literal, decoded.
    Str(String),
    /// A number literal, as written.
    Num(String),
    /// An operator or punctuation.
    Sym(&'static str),
}

/// A token and the (1-based) line it starts on.
#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub line: usize,
}

const SYMBOLS: &[&str] = &[
    "...", "..", "==", "~=", "<=", ">=", "+", "-", "*", "/", "%", "^", "#", "<", ">", "=", "(",
    ")", "{", "}", "[", "]", ";", ":", ",", ".",
];

/// Splits `src` (whose first line is line `first_line`) into tokens.
/// Returns the line of an unterminated string or comment as the error.
pub fn tokenize(src: &str, first_line: usize) -> Result<Vec<Token>, (usize, String)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = first_line;
    // The level of a long bracket `[==[` at `at`, if there is one.
    let long_open = |at: usize| -> Option<usize> {
        if b.get(at) != Some(&b'[') {
            return None;
        }
        let mut j = at + 1;
        while b.get(j) == Some(&b'=') {
            j += 1;
        }
        (b.get(j) == Some(&b'[')).then_some(j - at - 1)
    };
    // Skips a long bracket of `level` opened at `at`; returns the index after it.
    let skip_long = |at: usize, level: usize, line: &mut usize| -> Result<usize, (usize, String)> {
        let close: Vec<u8> = std::iter::once(b']')
            .chain(std::iter::repeat_n(b'=', level))
            .chain(std::iter::once(b']'))
            .collect();
        let start_line = *line;
        let mut j = at + level + 2;
        while j < b.len() {
            if b[j..].starts_with(&close) {
                return Ok(j + close.len());
            }
            if b[j] == b'\n' {
                *line += 1;
            }
            j += 1;
        }
        Err((start_line, "unterminated long string or comment".into()))
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"--") {
            if let Some(level) = long_open(i + 2) {
                i = skip_long(i + 2, level, &mut line)?;
            } else {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
        } else if c == b'"' || c == b'\'' {
            let start = line;
            let mut s = String::new();
            i += 1;
            loop {
                match b.get(i) {
                    None | Some(b'\n') => return Err((start, "unterminated string".into())),
                    Some(&q) if q == c => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        let e = *b
                            .get(i + 1)
                            .ok_or((start, "unterminated string".to_string()))?;
                        s.push(match e {
                            b'n' => '\n',
                            b't' => '\t',
                            b'0' => '\0',
                            other => other as char,
                        });
                        i += 2;
                    }
                    Some(_) => {
                        let ch = src[i..].chars().next().expect("in bounds");
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            out.push(Token {
                tok: Tok::Str(s),
                line: start,
            });
        } else if let Some(level) = long_open(i) {
            let start = line;
            let from = i + level + 2;
            i = skip_long(i, level, &mut line)?;
            out.push(Token {
                tok: Tok::Str(src[from..i - level - 2].to_string()),
                line: start,
            });
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
                // An exponent sign belongs to the number: 1e-5.
                if (b[i] == b'e' || b[i] == b'E') && matches!(b.get(i + 1), Some(b'-' | b'+')) {
                    i += 1;
                }
                i += 1;
            }
            out.push(Token {
                tok: Tok::Num(src[start..i].to_string()),
                line,
            });
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Name(src[start..i].to_string()),
                line,
            });
        } else if let Some(sym) = SYMBOLS.iter().find(|s| b[i..].starts_with(s.as_bytes())) {
            i += sym.len();
            out.push(Token {
                tok: Tok::Sym(sym),
                line,
            });
        } else {
            return Err((line, format!("unexpected character `{}`", c as char)));
        }
    }
    Ok(out)
}

impl Token {
    pub fn is_name(&self, n: &str) -> bool {
        matches!(&self.tok, Tok::Name(s) if s == n)
    }
    pub fn is_sym(&self, s: &str) -> bool {
        matches!(&self.tok, Tok::Sym(x) if *x == s)
    }
}

/// The kinds of block the structure pass tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// `if ... end` as a whole (its condition runs when the `if` is reached).
    If,
    /// One arm of an `if`: after `then` or `else`, up to the next arm or `end`.
    Arm,
    /// `elseif` conditions: inside the `if`, outside every arm.
    ElseIfCond,
    Loop,
    Function,
    Do,
}

#[derive(Debug, Clone)]
pub struct Block {
    pub kind: BlockKind,
    /// Token index range (start inclusive, end exclusive).
    pub start: usize,
    pub end: usize,
    pub parent: Option<usize>,
    /// Contains a `return` as its own last statement.
    pub returns: bool,
    /// Contains a `break` that leaves it (targets a loop outside it).
    pub breaks_out: bool,
}

/// The block structure of a body: for each token, its innermost block.
#[derive(Debug, Default)]
pub struct Structure {
    pub blocks: Vec<Block>,
    /// Innermost block of each token (`None`: top level).
    pub inner: Vec<Option<usize>>,
}

impl Structure {
    /// Builds the structure; `Err` with a line when blocks do not balance.
    pub fn of(toks: &[Token]) -> Result<Self, (usize, String)> {
        let mut s = Structure::default();
        let mut stack: Vec<usize> = Vec::new();
        // `for`/`while` whose `do` is still to come.
        let mut pending_do = 0usize;
        let open = |s: &mut Structure, stack: &mut Vec<usize>, kind, at| {
            s.blocks.push(Block {
                kind,
                start: at,
                end: usize::MAX,
                parent: stack.last().copied(),
                returns: false,
                breaks_out: false,
            });
            stack.push(s.blocks.len() - 1);
        };
        let close = |s: &mut Structure, stack: &mut Vec<usize>, at: usize, line: usize| {
            let b = stack
                .pop()
                .ok_or((line, "`end` without a block to close".to_string()))?;
            s.blocks[b].end = at;
            Ok::<usize, (usize, String)>(b)
        };
        for (i, t) in toks.iter().enumerate() {
            let Tok::Name(word) = &t.tok else {
                s.inner.push(stack.last().copied());
                continue;
            };
            // A word that ends or splits a block belongs to that block; a
            // word that opens one belongs to the new block.
            if matches!(word.as_str(), "end" | "until" | "else" | "elseif" | "then") {
                s.inner.push(stack.last().copied());
            }
            match word.as_str() {
                "if" => open(&mut s, &mut stack, BlockKind::If, i),
                "then" => {
                    // Ends the condition of an `if` or an `elseif`.
                    if let Some(&top) = stack.last()
                        && s.blocks[top].kind == BlockKind::ElseIfCond
                    {
                        close(&mut s, &mut stack, i, t.line)?;
                    }
                    match stack.last() {
                        Some(&top) if s.blocks[top].kind == BlockKind::If => {}
                        _ => return Err((t.line, "`then` without an `if`".into())),
                    }
                    open(&mut s, &mut stack, BlockKind::Arm, i + 1);
                }
                "elseif" | "else" => {
                    let arm = close(&mut s, &mut stack, i, t.line)?;
                    if s.blocks[arm].kind != BlockKind::Arm {
                        return Err((t.line, format!("`{word}` outside an `if`")));
                    }
                    let kind = if word == "else" {
                        BlockKind::Arm
                    } else {
                        BlockKind::ElseIfCond
                    };
                    open(&mut s, &mut stack, kind, i + 1);
                }
                "for" | "while" => {
                    open(&mut s, &mut stack, BlockKind::Loop, i);
                    pending_do += 1;
                }
                "repeat" => open(&mut s, &mut stack, BlockKind::Loop, i),
                "do" if pending_do > 0 => pending_do -= 1,
                "do" => open(&mut s, &mut stack, BlockKind::Do, i),
                "function" => open(&mut s, &mut stack, BlockKind::Function, i),
                "end" => {
                    let b = close(&mut s, &mut stack, i, t.line)?;
                    if s.blocks[b].kind == BlockKind::Arm {
                        // The arm and its `if` end together.
                        close(&mut s, &mut stack, i + 1, t.line)?;
                    }
                }
                "until" => {
                    close(&mut s, &mut stack, i, t.line)?;
                }
                "return" => {
                    if let Some(&top) = stack.last() {
                        s.blocks[top].returns = true;
                    }
                }
                "break" => {
                    for &b in stack.iter().rev() {
                        if s.blocks[b].kind == BlockKind::Loop {
                            break;
                        }
                        s.blocks[b].breaks_out = true;
                    }
                }
                _ => {}
            }
            if !matches!(word.as_str(), "end" | "until" | "else" | "elseif" | "then") {
                s.inner.push(stack.last().copied());
            }
        }
        if let Some(&b) = stack.first() {
            let line = toks[s.blocks[b].start.min(toks.len() - 1)].line;
            return Err((line, "block is never closed with `end`".into()));
        }
        Ok(s)
    }

    /// The blocks enclosing token `i`, innermost first.
    pub fn enclosing(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.inner[i], move |&b| self.blocks[b].parent)
    }

    fn encloses(&self, b: usize, i: usize) -> bool {
        self.enclosing(i).any(|x| x == b)
    }

    /// Whether no path from token `w` can reach token `s` because a block
    /// around `w` (not around `s`) always returns: an `if` arm or a `do`
    /// block whose last statement is `return` and that no `break` leaves.
    fn shielded(&self, w: usize, s: usize) -> bool {
        self.enclosing(w).any(|b| {
            let blk = &self.blocks[b];
            matches!(blk.kind, BlockKind::Arm | BlockKind::Do)
                && blk.returns
                && !blk.breaks_out
                && !self.encloses(b, s)
        })
    }

    /// Whether the code at token `s` may run after the code at token `w`
    /// has run: `w` comes first in the text, or both are in one loop, or `w`
    /// is in a function (which may be called anywhere) — unless a returning
    /// block around `w` ends every such path.
    pub fn may_follow(&self, w: usize, s: usize) -> bool {
        if self.shielded(w, s) {
            return false;
        }
        if w < s {
            return true;
        }
        // (Further on: `s` comes first in the text.)
        let in_fn = |t: usize| {
            self.enclosing(t)
                .any(|b| self.blocks[b].kind == BlockKind::Function)
        };
        in_fn(w)
            || in_fn(s)
            || self
                .enclosing(s)
                .any(|b| self.blocks[b].kind == BlockKind::Loop && self.encloses(b, w))
    }

    /// Whether, in one run of the function around both tokens (a function
    /// that defines no other), the code at `s` may run after the code at
    /// `w`: as [`Structure::may_follow`], but for a call of that function.
    pub fn may_follow_within(&self, w: usize, s: usize) -> bool {
        if self.shielded(w, s) {
            return false;
        }
        w < s
            || self
                .enclosing(s)
                .any(|b| self.blocks[b].kind == BlockKind::Loop && self.encloses(b, w))
    }

    /// Whether token `i` runs every time the block `top` (`None`: the
    /// body) runs up to it: it is directly in `top`, or in the condition of
    /// an `if` directly in `top`.
    pub fn at_top_of(&self, i: usize, top: Option<usize>) -> bool {
        match self.inner[i] {
            b if b == top => true,
            Some(b) => self.blocks[b].kind == BlockKind::If && self.blocks[b].parent == top,
            None => false,
        }
    }
}
