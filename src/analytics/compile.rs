//! Compiling an [`Expr`] to the program `analytics.query` runs: `BITOP`
//! steps into the result key and numbered registers (temporary keys), with
//! the newer operators (`DIFF`, `ANDOR`, `ONE`) when the server has them and
//! the same result without them.

use super::expr::Expr;

/// Where a step reads or writes: the result key, a register, or the
/// `n`th distinct input bitmap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operand {
    Result,
    Reg(usize),
    Input(usize),
}

/// A compiled expression: `registers` temporary keys, the distinct input
/// bitmaps, and the steps as `analytics.query` reads them (`<OP> <dst>
/// <src>...` with KEYS indices: 1 the result, then the registers, then
/// the inputs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Program {
    pub(super) registers: usize,
    pub(super) inputs: Vec<String>,
    pub(super) steps: Vec<String>,
}

struct Compiler<'a> {
    /// The key of a leaf ([`Expr::Event`]).
    key_of: &'a dyn Fn(&Expr) -> String,
    inputs: Vec<String>,
    steps: Vec<(&'static str, Operand, Vec<Operand>)>,
    free: Vec<usize>,
    registers: usize,
    newer: bool,
}

/// Compiles `expr` (checked), whose leaves have the keys `key_of` gives;
/// `newer`: the server has `BITOP DIFF`, `DIFF1`, `ANDOR` and `ONE`.
pub(super) fn compile(expr: &Expr, key_of: &dyn Fn(&Expr) -> String, newer: bool) -> Program {
    let mut c = Compiler {
        key_of,
        inputs: Vec::new(),
        steps: Vec::new(),
        free: Vec::new(),
        registers: 0,
        newer,
    };
    c.eval(expr, Operand::Result);
    let regs = c.registers;
    let index = |o: Operand| match o {
        Operand::Result => 1,
        Operand::Reg(r) => 2 + r,
        Operand::Input(i) => 2 + regs + i,
    };
    let steps = c
        .steps
        .iter()
        .map(|(op, dst, srcs)| {
            let mut s = format!("{op} {}", index(*dst));
            for x in srcs {
                s.push_str(&format!(" {}", index(*x)));
            }
            s
        })
        .collect();
    Program {
        registers: regs,
        inputs: c.inputs,
        steps,
    }
}

impl Compiler<'_> {
    fn reg(&mut self) -> Operand {
        let r = self.free.pop().unwrap_or_else(|| {
            self.registers += 1;
            self.registers - 1
        });
        Operand::Reg(r)
    }

    fn release(&mut self, o: Operand) {
        if let Operand::Reg(r) = o {
            self.free.push(r);
        }
    }

    fn step(&mut self, op: &'static str, dst: Operand, srcs: Vec<Operand>) {
        self.steps.push((op, dst, srcs));
    }

    /// The input of leaf `e` (each distinct key once).
    fn leaf(&mut self, e: &Expr) -> Operand {
        let key = (self.key_of)(e);
        let i = match self.inputs.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                self.inputs.push(key);
                self.inputs.len() - 1
            }
        };
        Operand::Input(i)
    }

    /// `e` as an operand: a leaf's input as is, anything else computed
    /// into a fresh register (release it after use).
    fn operand(&mut self, e: &Expr) -> Operand {
        if matches!(e, Expr::Event { .. }) {
            return self.leaf(e);
        }
        let r = self.reg();
        self.eval(e, r);
        r
    }

    fn operands(&mut self, v: &[Expr]) -> Vec<Operand> {
        v.iter().map(|e| self.operand(e)).collect()
    }

    fn release_all(&mut self, v: Vec<Operand>) {
        v.into_iter().for_each(|o| self.release(o));
    }

    /// Computes `e` into `dst`.
    fn eval(&mut self, e: &Expr, dst: Operand) {
        match e {
            Expr::Event { .. } => {
                let src = self.leaf(e);
                self.step("OR", dst, vec![src]);
            }
            Expr::Or(v) => self.nary("OR", v, dst),
            Expr::Xor(v) => self.nary("XOR", v, dst),
            Expr::And(v) => self.and(v, dst),
            Expr::Diff(a, rest) => self.diff(a, rest, dst),
            Expr::One(v) => self.one(v, dst),
            Expr::AtLeast(n, v) => self.at_least(*n, v, dst),
            Expr::Not(_) => unreachable!("checked: NOT only inside AND"),
        }
    }

    fn nary(&mut self, op: &'static str, v: &[Expr], dst: Operand) {
        let srcs = self.operands(v);
        self.step(op, dst, srcs.clone());
        self.release_all(srcs);
    }

    fn and(&mut self, v: &[Expr], dst: Operand) {
        let (neg, pos): (Vec<&Expr>, Vec<&Expr>) =
            v.iter().partition(|e| matches!(e, Expr::Not(_)));
        let neg: Vec<Expr> = neg
            .into_iter()
            .map(|e| match e {
                Expr::Not(inner) => (**inner).clone(),
                _ => unreachable!("partitioned"),
            })
            .collect();
        let pos: Vec<Expr> = pos.into_iter().cloned().collect();
        if !neg.is_empty() {
            let first = if pos.len() == 1 {
                pos[0].clone()
            } else {
                Expr::And(pos)
            };
            return self.diff(&first, &neg, dst);
        }
        // x AND (y1 OR y2 ...) is one ANDOR where the server has it.
        if self.newer
            && pos.len() == 2
            && let Some(or) = pos.iter().position(|e| matches!(e, Expr::Or(_)))
        {
            let Expr::Or(ys) = &pos[or] else {
                unreachable!()
            };
            let mut srcs = vec![self.operand(&pos[1 - or])];
            srcs.extend(self.operands(ys));
            self.step("ANDOR", dst, srcs.clone());
            return self.release_all(srcs);
        }
        self.nary("AND", &pos, dst);
    }

    /// `a` minus every one of `rest`: `DIFF`, or `a XOR (a AND (OR rest))`.
    fn diff(&mut self, a: &Expr, rest: &[Expr], dst: Operand) {
        if self.newer {
            let mut srcs = vec![self.operand(a)];
            for e in rest {
                // DIFF subtracts the OR of its sources: an OR's operands go in as they are.
                match e {
                    Expr::Or(ys) => srcs.extend(self.operands(ys)),
                    _ => srcs.push(self.operand(e)),
                }
            }
            self.step("DIFF", dst, srcs.clone());
            return self.release_all(srcs);
        }
        let x = if matches!(a, Expr::Event { .. }) {
            self.leaf(a)
        } else {
            self.eval(a, dst);
            dst
        };
        let y = if rest.len() == 1 {
            self.operand(&rest[0])
        } else {
            let t = self.reg();
            let srcs = self.operands(rest);
            self.step("OR", t, srcs.clone());
            self.release_all(srcs);
            t
        };
        if x != dst {
            self.step("AND", dst, vec![x, y]);
            self.step("XOR", dst, vec![dst, x]);
        } else {
            let t = if matches!(y, Operand::Reg(_)) {
                y
            } else {
                self.reg()
            };
            self.step("AND", t, vec![dst, y]);
            self.step("XOR", dst, vec![dst, t]);
            if t != y {
                self.release(t);
            }
        }
        self.release(y);
    }

    /// In exactly one of `v`: `ONE`, or counting to two in bit planes
    /// (`ones`, `twos`) and keeping `ones AND NOT twos`.
    fn one(&mut self, v: &[Expr], dst: Operand) {
        if self.newer || v.len() == 1 {
            let op = if self.newer { "ONE" } else { "OR" };
            return self.nary(op, v, dst);
        }
        self.eval(&v[0], dst);
        let (twos, t) = (self.reg(), self.reg());
        for (i, e) in v[1..].iter().enumerate() {
            let x = self.operand(e);
            if i == 0 {
                self.step("AND", twos, vec![dst, x]);
            } else {
                self.step("AND", t, vec![dst, x]);
                self.step("OR", twos, vec![twos, t]);
            }
            self.step("XOR", dst, vec![dst, x]);
            self.release(x);
        }
        self.step("AND", t, vec![dst, twos]);
        self.step("XOR", dst, vec![dst, t]);
        self.release(t);
        self.release(twos);
    }

    /// In at least `n` of `v`: `at[j]` holds the ids seen in at least `j+1`
    /// of the operands so far, `at[n-1]` being `dst`.
    fn at_least(&mut self, n: usize, v: &[Expr], dst: Operand) {
        if n == 1 {
            return self.nary("OR", v, dst);
        }
        let mut at: Vec<Operand> = (0..n - 1).map(|_| self.reg()).collect();
        at.push(dst);
        let t = self.reg();
        for (i, e) in v.iter().enumerate() {
            let x = self.operand(e);
            for j in (1..=i.min(n - 1)).rev() {
                if j == i {
                    self.step("AND", at[j], vec![at[j - 1], x]);
                } else {
                    self.step("AND", t, vec![at[j - 1], x]);
                    self.step("OR", at[j], vec![at[j], t]);
                }
            }
            if i == 0 {
                self.step("OR", at[0], vec![x]);
            } else {
                self.step("OR", at[0], vec![at[0], x]);
            }
            self.release(x);
        }
        self.release(t);
        for r in at {
            self.release(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytics::Period;

    fn name(e: &Expr) -> String {
        match e {
            Expr::Event { event, .. } => event.clone(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn programs_with_and_without_the_newer_operators() {
        let d = Period::Year(2024);
        let (a, b, c) = (
            Expr::event("a", d),
            Expr::event("b", d),
            Expr::event("c", d),
        );
        let e = a.clone().and_not(b.clone().or(c.clone()));
        let old = compile(&e, &name, false);
        assert_eq!(old.inputs, ["a", "b", "c"]);
        assert_eq!(old.registers, 1);
        // a is KEYS[3], (b OR c) into the register KEYS[2].
        assert_eq!(old.steps, ["OR 2 4 5", "AND 1 3 2", "XOR 1 1 3"]);
        let new = compile(&e, &name, true);
        assert_eq!(new.steps, ["DIFF 1 2 3 4"]);
        assert_eq!(new.registers, 0);
        // A NOT before the positive operand: the same program.
        let flipped = Expr::And(vec![
            Expr::Not(Box::new(b.clone().or(c.clone()))),
            a.clone(),
        ]);
        assert_eq!(compile(&flipped, &name, false).steps, old.steps);
        let andor = a.clone().and(b.clone().or(c.clone()));
        assert_eq!(compile(&andor, &name, true).steps, ["ANDOR 1 2 3 4"]);
        let one = Expr::One(vec![a.clone(), b.clone(), c.clone()]);
        assert_eq!(compile(&one, &name, true).steps, ["ONE 1 2 3 4"]);
        assert_eq!(compile(&one, &name, false).registers, 2);
        let leaf = a.clone();
        assert_eq!(compile(&leaf, &name, false).steps, ["OR 1 2"]);
        // A repeated bitmap is one input.
        let twice = a.clone().xor(a.clone());
        assert_eq!(compile(&twice, &name, false).steps, ["XOR 1 2 2"]);
    }
}
