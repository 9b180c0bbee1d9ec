//! Evaluating an [`Expr`] client-side over fetched bitmaps (a cluster where
//! its bitmaps are in several slots), with `BITOP`'s semantics: a missing
//! key is an empty bitmap, shorter operands are zero-extended.

use super::expr::Expr;

/// `a OP b` byte by byte, zero-extended to the longer.
fn zip(a: &[u8], b: &[u8], f: impl Fn(u8, u8) -> u8) -> Vec<u8> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| f(*a.get(i).unwrap_or(&0), *b.get(i).unwrap_or(&0)))
        .collect()
}

fn fold(v: Vec<Vec<u8>>, f: impl Fn(u8, u8) -> u8 + Copy) -> Vec<u8> {
    let mut it = v.into_iter();
    let first = it.next().unwrap_or_default();
    it.fold(first, |acc, b| zip(&acc, &b, f))
}

/// The bitmap of `e`, the bitmap of each leaf given by `bitmap_of`.
pub(super) fn eval(e: &Expr, bitmap_of: &dyn Fn(&Expr) -> Vec<u8>) -> Vec<u8> {
    let all = |v: &[Expr]| v.iter().map(|e| eval(e, bitmap_of)).collect::<Vec<_>>();
    match e {
        Expr::Event { .. } => bitmap_of(e),
        Expr::Or(v) => fold(all(v), |a, b| a | b),
        Expr::Xor(v) => fold(all(v), |a, b| a ^ b),
        Expr::And(v) => {
            let (neg, pos): (Vec<&Expr>, Vec<&Expr>) =
                v.iter().partition(|e| matches!(e, Expr::Not(_)));
            let pos: Vec<Vec<u8>> = pos.into_iter().map(|e| eval(e, bitmap_of)).collect();
            let mut out = fold(pos, |a, b| a & b);
            for n in neg {
                let Expr::Not(inner) = n else {
                    unreachable!("partitioned")
                };
                let minus = eval(inner, bitmap_of);
                out = zip(&out, &minus, |a, b| a & !b);
            }
            out
        }
        Expr::Diff(a, rest) => {
            let minus = fold(all(rest), |a, b| a | b);
            zip(&eval(a, bitmap_of), &minus, |a, b| a & !b)
        }
        Expr::One(v) => {
            let (mut ones, mut twos) = (Vec::new(), Vec::new());
            for x in all(v) {
                twos = zip(&twos, &zip(&ones, &x, |a, b| a & b), |a, b| a | b);
                ones = zip(&ones, &x, |a, b| a ^ b);
            }
            zip(&ones, &twos, |a, b| a & !b)
        }
        Expr::AtLeast(n, v) => {
            let mut at: Vec<Vec<u8>> = vec![Vec::new(); *n];
            for x in all(v) {
                for j in (1..*n).rev() {
                    let t = zip(&at[j - 1], &x, |a, b| a & b);
                    at[j] = zip(&at[j], &t, |a, b| a | b);
                }
                at[0] = zip(&at[0], &x, |a, b| a | b);
            }
            at.pop().unwrap_or_default()
        }
        Expr::Not(_) => unreachable!("checked: NOT only inside AND"),
    }
}

/// The number of set bits.
pub(super) fn count(bitmap: &[u8]) -> u64 {
    bitmap.iter().map(|b| u64::from(b.count_ones())).sum()
}

/// Whether bit `id` is set.
pub(super) fn contains(bitmap: &[u8], id: u64) -> bool {
    let byte = (id / 8) as usize;
    bitmap
        .get(byte)
        .is_some_and(|b| b & (0x80 >> (id % 8)) != 0)
}
