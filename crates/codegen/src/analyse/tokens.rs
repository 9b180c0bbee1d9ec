//! Just enough of Lua 5.1's lexer to check a body against its header:
//! names, string literals (decoded), numbers and symbols; comments and long
//! strings skipped or read whole.

/// One token of a body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
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
pub(crate) struct Token {
    pub tok: Tok,
    pub line: usize,
}

impl Token {
    pub(crate) fn is_name(&self, n: &str) -> bool {
        matches!(&self.tok, Tok::Name(s) if s == n)
    }

    pub(crate) fn is_sym(&self, s: &str) -> bool {
        matches!(&self.tok, Tok::Sym(x) if *x == s)
    }
}

const SYMBOLS: &[&str] = &[
    "...", "..", "==", "~=", "<=", ">=", "+", "-", "*", "/", "%", "^", "#", "<", ">", "=", "(",
    ")", "{", "}", "[", "]", ";", ":", ",", ".",
];

/// A problem at a line: what the lexer and the block structure refuse.
pub(crate) type LineError = (usize, String);

/// The lexer's place in the text.
struct Lexer<'a> {
    src: &'a str,
    b: &'a [u8],
    i: usize,
    line: usize,
    out: Vec<Token>,
}

impl Lexer<'_> {
    fn push(&mut self, tok: Tok, line: usize) {
        self.out.push(Token { tok, line });
    }

    /// The level of a long bracket `[==[` at `at`, if there is one.
    fn long_open(&self, at: usize) -> Option<usize> {
        if self.b.get(at) != Some(&b'[') {
            return None;
        }
        let mut j = at + 1;
        while self.b.get(j) == Some(&b'=') {
            j += 1;
        }
        (self.b.get(j) == Some(&b'[')).then_some(j - at - 1)
    }

    /// Skips a long bracket of `level` opened at `at`; returns the index after it.
    fn skip_long(&mut self, at: usize, level: usize) -> Result<usize, LineError> {
        let close: Vec<u8> = std::iter::once(b']')
            .chain(std::iter::repeat_n(b'=', level))
            .chain(std::iter::once(b']'))
            .collect();
        let start_line = self.line;
        let mut j = at + level + 2;
        while j < self.b.len() {
            if self.b[j..].starts_with(&close) {
                return Ok(j + close.len());
            }
            if self.b[j] == b'\n' {
                self.line += 1;
            }
            j += 1;
        }
        Err((start_line, "unterminated long string or comment".into()))
    }

    /// A comment from `--` at `i`: to the end of the line, or a long one.
    fn comment(&mut self) -> Result<(), LineError> {
        if let Some(level) = self.long_open(self.i + 2) {
            self.i = self.skip_long(self.i + 2, level)?;
        } else {
            while self.i < self.b.len() && self.b[self.i] != b'\n' {
                self.i += 1;
            }
        }
        Ok(())
    }

    /// A string literal quoted with `quote` at `i`, decoded.
    fn quoted(&mut self, quote: u8) -> Result<(), LineError> {
        let start = self.line;
        let unterminated = || (start, "unterminated string".to_string());
        let mut s = String::new();
        self.i += 1;
        loop {
            match self.b.get(self.i) {
                None | Some(b'\n') => return Err(unterminated()),
                Some(&q) if q == quote => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') => {
                    let e = *self.b.get(self.i + 1).ok_or_else(unterminated)?;
                    s.push(match e {
                        b'n' => '\n',
                        b't' => '\t',
                        b'0' => '\0',
                        other => other as char,
                    });
                    self.i += 2;
                }
                Some(_) => {
                    let ch = self.src[self.i..].chars().next().expect("in bounds");
                    s.push(ch);
                    self.i += ch.len_utf8();
                }
            }
        }
        self.push(Tok::Str(s), start);
        Ok(())
    }

    /// A long string of `level` at `i`, read whole.
    fn long_string(&mut self, level: usize) -> Result<(), LineError> {
        let start = self.line;
        let from = self.i + level + 2;
        self.i = self.skip_long(self.i, level)?;
        let text = self.src[from..self.i - level - 2].to_string();
        self.push(Tok::Str(text), start);
        Ok(())
    }

    /// A number at `i`, as written (an exponent's sign included: `1e-5`).
    fn number(&mut self) {
        let start = self.i;
        let b = self.b;
        while self.i < b.len()
            && (b[self.i].is_ascii_alphanumeric() || b[self.i] == b'.' || b[self.i] == b'_')
        {
            if (b[self.i] == b'e' || b[self.i] == b'E')
                && matches!(b.get(self.i + 1), Some(b'-' | b'+'))
            {
                self.i += 1;
            }
            self.i += 1;
        }
        let text = self.src[start..self.i].to_string();
        self.push(Tok::Num(text), self.line);
    }

    /// A name or keyword at `i`.
    fn name(&mut self) {
        let start = self.i;
        while self.i < self.b.len()
            && (self.b[self.i].is_ascii_alphanumeric() || self.b[self.i] == b'_')
        {
            self.i += 1;
        }
        let text = self.src[start..self.i].to_string();
        self.push(Tok::Name(text), self.line);
    }

    /// The token (or the space or comment) at `i`.
    fn step(&mut self) -> Result<(), LineError> {
        let (b, i) = (self.b, self.i);
        let c = b[i];
        if c == b'\n' {
            self.line += 1;
            self.i += 1;
        } else if c.is_ascii_whitespace() {
            self.i += 1;
        } else if b[i..].starts_with(b"--") {
            self.comment()?;
        } else if c == b'"' || c == b'\'' {
            self.quoted(c)?;
        } else if let Some(level) = self.long_open(i) {
            self.long_string(level)?;
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            self.number();
        } else if c.is_ascii_alphabetic() || c == b'_' {
            self.name();
        } else if let Some(sym) = SYMBOLS.iter().find(|s| b[i..].starts_with(s.as_bytes())) {
            self.i += sym.len();
            self.push(Tok::Sym(sym), self.line);
        } else {
            return Err((self.line, format!("unexpected character `{}`", c as char)));
        }
        Ok(())
    }
}

/// Splits `src` (whose first line is line `first_line`) into tokens.
/// Returns the line of an unterminated string or comment as the error.
pub(crate) fn tokenize(src: &str, first_line: usize) -> Result<Vec<Token>, LineError> {
    let mut lexer = Lexer {
        src,
        b: src.as_bytes(),
        i: 0,
        line: first_line,
        out: Vec::new(),
    };
    while lexer.i < lexer.b.len() {
        lexer.step()?;
    }
    Ok(lexer.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<(Tok, usize)> {
        tokenize(src, 10)
            .expect("tokens")
            .into_iter()
            .map(|t| (t.tok, t.line))
            .collect()
    }

    #[test]
    fn the_lexer_reads_names_strings_numbers_and_symbols_with_their_lines() {
        let name = |s: &str| Tok::Name(s.into());
        assert_eq!(
            toks("local x = 'a\\'b' -- note\n..[[long\n]] 1e-5 ~= #KEYS"),
            [
                (name("local"), 10),
                (name("x"), 10),
                (Tok::Sym("="), 10),
                (Tok::Str("a'b".into()), 10),
                (Tok::Sym(".."), 11),
                (Tok::Str("long\n".into()), 11),
                (Tok::Num("1e-5".into()), 12),
                (Tok::Sym("~="), 12),
                (Tok::Sym("#"), 12),
                (name("KEYS"), 12),
            ]
        );
        assert_eq!(toks("--[==[ a ]] b ]==] x"), [(name("x"), 10)]);
    }

    #[test]
    fn the_lexer_refuses_what_does_not_end() {
        assert_eq!(
            tokenize("x = 'open\n'", 3).unwrap_err(),
            (3, "unterminated string".into())
        );
        assert_eq!(tokenize("\n--[[ never", 3).unwrap_err().0, 4);
        assert!(
            tokenize("a = b @ c", 3)
                .unwrap_err()
                .1
                .contains("unexpected character `@`")
        );
    }
}
