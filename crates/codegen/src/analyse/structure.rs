//! The block structure of a body (`if` arms, loops, functions, `do`
//! blocks, `return`s and `break`s): what tells which code may run after
//! which.

use super::tokens::{LineError, Tok, Token};

/// The kinds of block the structure pass tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
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
pub(crate) struct Block {
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
pub(crate) struct Structure {
    pub blocks: Vec<Block>,
    /// Innermost block of each token (`None`: top level).
    pub inner: Vec<Option<usize>>,
}

/// The structure as built so far, with the blocks still open.
#[derive(Default)]
struct Builder {
    s: Structure,
    stack: Vec<usize>,
    /// `for`/`while` whose `do` is still to come.
    pending_do: usize,
}

impl Builder {
    fn open(&mut self, kind: BlockKind, at: usize) {
        self.s.blocks.push(Block {
            kind,
            start: at,
            end: usize::MAX,
            parent: self.stack.last().copied(),
            returns: false,
            breaks_out: false,
        });
        self.stack.push(self.s.blocks.len() - 1);
    }

    fn close(&mut self, at: usize, line: usize) -> Result<usize, LineError> {
        let b = self
            .stack
            .pop()
            .ok_or((line, "`end` without a block to close".to_string()))?;
        self.s.blocks[b].end = at;
        Ok(b)
    }

    fn top_kind(&self) -> Option<BlockKind> {
        self.stack.last().map(|&b| self.s.blocks[b].kind)
    }

    /// `then`: ends the condition of an `if` or an `elseif`, opens an arm.
    fn then(&mut self, i: usize, line: usize) -> Result<(), LineError> {
        if self.top_kind() == Some(BlockKind::ElseIfCond) {
            self.close(i, line)?;
        }
        if self.top_kind() != Some(BlockKind::If) {
            return Err((line, "`then` without an `if`".into()));
        }
        self.open(BlockKind::Arm, i + 1);
        Ok(())
    }

    /// `elseif` or `else`: ends an arm, opens a condition or an arm.
    fn next_arm(&mut self, word: &str, i: usize, line: usize) -> Result<(), LineError> {
        let arm = self.close(i, line)?;
        if self.s.blocks[arm].kind != BlockKind::Arm {
            return Err((line, format!("`{word}` outside an `if`")));
        }
        let kind = if word == "else" {
            BlockKind::Arm
        } else {
            BlockKind::ElseIfCond
        };
        self.open(kind, i + 1);
        Ok(())
    }

    /// `end`: closes a block (an arm with its `if`).
    fn end(&mut self, i: usize, line: usize) -> Result<(), LineError> {
        let b = self.close(i, line)?;
        if self.s.blocks[b].kind == BlockKind::Arm {
            self.close(i + 1, line)?;
        }
        Ok(())
    }

    /// `break`: marks every block up to its loop as left by it.
    fn break_out(&mut self) {
        for &b in self.stack.iter().rev() {
            if self.s.blocks[b].kind == BlockKind::Loop {
                break;
            }
            self.s.blocks[b].breaks_out = true;
        }
    }

    /// The keyword or name `word` at token `i`.
    fn word(&mut self, word: &str, i: usize, line: usize) -> Result<(), LineError> {
        match word {
            "if" => self.open(BlockKind::If, i),
            "then" => self.then(i, line)?,
            "elseif" | "else" => self.next_arm(word, i, line)?,
            "for" | "while" => {
                self.open(BlockKind::Loop, i);
                self.pending_do += 1;
            }
            "repeat" => self.open(BlockKind::Loop, i),
            "do" if self.pending_do > 0 => self.pending_do -= 1,
            "do" => self.open(BlockKind::Do, i),
            "function" => self.open(BlockKind::Function, i),
            "end" => self.end(i, line)?,
            "until" => {
                self.close(i, line)?;
            }
            "return" => {
                if let Some(&top) = self.stack.last() {
                    self.s.blocks[top].returns = true;
                }
            }
            "break" => self.break_out(),
            _ => {}
        }
        Ok(())
    }
}

impl Structure {
    /// Builds the structure; `Err` with a line when blocks do not balance.
    pub(crate) fn of(toks: &[Token]) -> Result<Self, LineError> {
        let mut b = Builder::default();
        for (i, t) in toks.iter().enumerate() {
            let Tok::Name(word) = &t.tok else {
                b.s.inner.push(b.stack.last().copied());
                continue;
            };
            // A word that ends or splits a block belongs to that block; a
            // word that opens one belongs to the new block.
            let closing = matches!(word.as_str(), "end" | "until" | "else" | "elseif" | "then");
            if closing {
                b.s.inner.push(b.stack.last().copied());
            }
            b.word(word, i, t.line)?;
            if !closing {
                b.s.inner.push(b.stack.last().copied());
            }
        }
        if let Some(&first) = b.stack.first() {
            let line = toks[b.s.blocks[first].start.min(toks.len() - 1)].line;
            return Err((line, "block is never closed with `end`".into()));
        }
        Ok(b.s)
    }

    /// The blocks enclosing token `i`, innermost first.
    pub(crate) fn enclosing(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
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

    /// Whether `w` and `s` are in two parts of one `if` (`w` in an arm,
    /// `s` in another arm or an `elseif` condition) that no loop or
    /// function runs twice (`within`: no loop): one run of the `if` takes
    /// one arm only, so `s` cannot run after `w`.
    fn exclusive(&self, w: usize, s: usize, within: bool) -> bool {
        let Some(arm) = self.enclosing(w).find(|&b| {
            self.blocks[b].kind == BlockKind::Arm
                && !self.encloses(b, s)
                && self.blocks[b].parent.is_some_and(|i| self.encloses(i, s))
        }) else {
            return false;
        };
        let parent = self.blocks[arm].parent.expect("an arm is in its if");
        !std::iter::successors(Some(parent), |&b| self.blocks[b].parent).any(|b| {
            let kind = self.blocks[b].kind;
            kind == BlockKind::Loop || (!within && kind == BlockKind::Function)
        })
    }

    /// Whether `s` and `w` are in one loop around both.
    fn in_one_loop(&self, w: usize, s: usize) -> bool {
        self.enclosing(s)
            .any(|b| self.blocks[b].kind == BlockKind::Loop && self.encloses(b, w))
    }

    /// Whether the code at token `s` may run after the code at token `w`
    /// has run: `w` comes first in the text, or both are in one loop, or `w`
    /// is in a function (which may be called anywhere) — unless a returning
    /// block around `w` ends every such path, or `w` and `s` are in two
    /// arms of one `if` that runs once.
    pub(crate) fn may_follow(&self, w: usize, s: usize) -> bool {
        if self.shielded(w, s) || self.exclusive(w, s, false) {
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
        in_fn(w) || in_fn(s) || self.in_one_loop(w, s)
    }

    /// Whether, in one run of the function around both tokens (a function
    /// that defines no other), the code at `s` may run after the code at
    /// `w`: as [`Structure::may_follow`], but for a call of that function.
    pub(crate) fn may_follow_within(&self, w: usize, s: usize) -> bool {
        if self.shielded(w, s) || self.exclusive(w, s, true) {
            return false;
        }
        w < s || self.in_one_loop(w, s)
    }

    /// Whether token `i` runs every time the block `top` (`None`: the
    /// body) runs up to it: it is directly in `top`, or in the condition of
    /// an `if` directly in `top`.
    pub(crate) fn at_top_of(&self, i: usize, top: Option<usize>) -> bool {
        match self.inner[i] {
            b if b == top => true,
            Some(b) => self.blocks[b].kind == BlockKind::If && self.blocks[b].parent == top,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::tokens::tokenize;

    fn structure(src: &str) -> (Vec<Token>, Structure) {
        let toks = tokenize(src, 1).expect("tokens");
        let s = Structure::of(&toks).expect("balanced");
        (toks, s)
    }

    /// The index of the `n`-th token named `name`.
    fn at(toks: &[Token], name: &str, n: usize) -> usize {
        (toks.iter().enumerate())
            .filter(|(_, t)| t.is_name(name))
            .nth(n)
            .expect(name)
            .0
    }

    #[test]
    fn a_returning_arm_shields_what_follows_the_if() {
        let (toks, s) = structure(
            "if c then\n  w()\n  return 0\nend\nr()\nfor i = 1, 2 do\n  x()\n  y()\nend\n",
        );
        let (w, r) = (at(&toks, "w", 0), at(&toks, "r", 0));
        assert!(!s.may_follow(w, r));
        let (x, y) = (at(&toks, "x", 0), at(&toks, "y", 0));
        assert!(s.may_follow(y, x), "one loop: y runs before the next x");
        assert!(s.may_follow_within(y, x));
        assert!(!s.may_follow(y, r));
        assert!(s.at_top_of(r, None) && !s.at_top_of(w, None));
        assert!(
            s.at_top_of(at(&toks, "c", 0), None),
            "an if's condition runs with its block"
        );
    }

    #[test]
    fn one_run_of_an_if_takes_one_arm() {
        let (toks, s) =
            structure("if a then\n  w()\nelseif b() then\n  x()\nelse\n  y()\nend\nz()\n");
        let (w, b, x, y, z) = (
            at(&toks, "w", 0),
            at(&toks, "b", 0),
            at(&toks, "x", 0),
            at(&toks, "y", 0),
            at(&toks, "z", 0),
        );
        assert!(!s.may_follow(w, x) && !s.may_follow(w, y) && !s.may_follow(x, y));
        assert!(
            !s.may_follow(w, b),
            "an elseif is tested only when the arms above did not run"
        );
        assert!(s.may_follow(b, x) && s.may_follow(w, z) && s.may_follow(y, z));
        let (toks, s) =
            structure("for i = 1, 2 do\n  if a then\n    w()\n  else\n    y()\n  end\nend\n");
        assert!(
            s.may_follow(at(&toks, "w", 0), at(&toks, "y", 0)),
            "a loop runs the if again"
        );
        let (toks, s) =
            structure("local function f()\n  if a then\n    w()\n  else\n    y()\n  end\nend\n");
        let (w, y) = (at(&toks, "w", 0), at(&toks, "y", 0));
        assert!(s.may_follow(w, y), "a function may be called again");
        assert!(!s.may_follow_within(w, y), "one call of it takes one arm");
    }

    #[test]
    fn blocks_must_balance() {
        let refused = |src: &str| Structure::of(&tokenize(src, 1).expect("tokens")).unwrap_err();
        assert_eq!(
            refused("if a then\nx()\n"),
            (1, "block is never closed with `end`".into())
        );
        assert!(refused("end").1.contains("without a block"));
        assert!(refused("do then end").1.contains("`then` without an `if`"));
        assert!(refused("do else end").1.contains("`else` outside an `if`"));
    }
}
