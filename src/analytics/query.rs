//! Answering a set expression: its count, a membership test or a page of
//! its members, computed by one `analytics.query` call (the expression
//! compiled to `BITOP` steps into temporary keys of one slot, optionally
//! kept as a cache key with a TTL), or client-side over the fetched bitmaps
//! when they are in several cluster slots.

use std::time::Duration;

use chrono::TimeZone;
use serde::Serialize;

use super::builder::check_event_name;
use super::compile::compile;
use super::expr::Expr;
use super::{Analytics, eval};
use crate::core::{Batch, Env, Op};
use crate::error::Error;
use crate::keys::{self, cluster_slot};
use crate::scripts;

/// The most ids one page of [`Query::members`] holds.
pub const MAX_PAGE: usize = scripts::analytics::QUERY_LIMIT_MAX as usize;

/// A page of an expression's members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Page {
    /// The ids, ascending.
    pub ids: Vec<u64>,
    /// The id to ask the next page from, `None` when there are no more.
    pub next: Option<u64>,
}

/// An expression ready to be answered, built by [`Analytics::query`].
#[derive(Debug)]
pub struct Query {
    expr: Expr,
    /// Each leaf's key, in [`Expr::leaves`] order.
    leaves: Vec<((String, Option<super::Period>), String)>,
    base: String,
    cache: Option<(String, u64)>,
    refused: Option<Error>,
}

/// What the script answers.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Count,
    Member(u64),
    Members(u64, usize),
}

impl<Tz: TimeZone> Analytics<Tz> {
    /// `expr` over this analytics' bitmaps, to answer with
    /// [`Query::count`], [`Query::contains`] or [`Query::members`].
    pub fn query(&self, expr: Expr) -> Query {
        let mut refused = expr.check().err();
        let mut leaves = Vec::new();
        for (event, period) in expr.leaves() {
            if let Err(e) = check_event_name("event", event) {
                refused.get_or_insert(e);
            }
            let key = match period {
                Some(p) => self.key(event, p),
                None => self.unique_key(event),
            };
            leaves.push(((event.to_string(), period), key));
        }
        let first = leaves
            .first()
            .map(|((e, _), _)| e.clone())
            .unwrap_or_default();
        Query {
            base: self.slot_base(&first),
            expr,
            leaves,
            cache: None,
            refused,
        }
    }
}

impl Query {
    /// Keeps the result under `<base>:cache:<name>` for `ttl` (whole
    /// milliseconds, at least one) and answers from it while it lives
    /// (for a period still open, a short TTL bounds how stale it gets).
    /// `<base>` is the slot of the expression's first event. On a cluster
    /// where the expression spans slots nothing is cached.
    pub fn cache(mut self, name: &str, ttl: Duration) -> Self {
        let ms = ttl.as_millis();
        if let Err(e) = check_event_name("cache name", name) {
            self.refused.get_or_insert(e);
        } else if ms == 0 || ms > scripts::analytics::QUERY_TTL_MS_MAX as u128 {
            self.refused.get_or_insert(Error::invalid(
                "ttl",
                "must be from 1 ms to 999999999999 ms",
            ));
        }
        self.cache = Some((format!("{}:cache:{name}", self.base), ms as u64));
        self
    }

    /// A query that answers `e` whatever it is asked (a ready query whose
    /// arguments were refused).
    pub(super) fn refuse(mut self, e: Error) -> Self {
        self.refused.get_or_insert(e);
        self
    }

    /// How many ids the expression holds.
    pub fn count(&self) -> Op<u64> {
        self.run(Answer::Count)
            .map(|v| v.first().copied().unwrap_or(0).max(0) as u64)
    }

    /// Whether the expression holds `id`.
    pub fn contains(&self, id: u64) -> Op<bool> {
        if id > scripts::analytics::QUERY_AT_MAX as u64 {
            return Op::ready(false);
        }
        self.run(Answer::Member(id)).map(|v| v.first() == Some(&1))
    }

    /// The expression's ids from `from` on, at most `limit` (1 to
    /// [`QUERY_LIMIT_MAX`](crate::scripts::analytics::QUERY_LIMIT_MAX)), ascending; the page says where the next one starts.
    pub fn members(&self, from: u64, limit: usize) -> Op<Page> {
        if limit == 0 || limit > MAX_PAGE {
            return Op::fail(Error::invalid(
                "limit",
                format!("must be from 1 to {MAX_PAGE}"),
            ));
        }
        if from > scripts::analytics::QUERY_AT_MAX as u64 {
            return Op::ready(Page {
                ids: Vec::new(),
                next: None,
            });
        }
        self.run(Answer::Members(from, limit)).map(|v| Page {
            next: u64::try_from(v[0]).ok(),
            ids: v[1..].iter().map(|&i| i as u64).collect(),
        })
    }

    /// A copy for an op to own (a query that is refused runs no op).
    fn shared(&self) -> Query {
        Query {
            expr: self.expr.clone(),
            leaves: self.leaves.clone(),
            base: self.base.clone(),
            cache: self.cache.clone(),
            refused: None,
        }
    }

    fn key_of(&self, e: &Expr) -> String {
        let Expr::Event { event, period } = e else {
            unreachable!("a leaf")
        };
        let leaf = (event.clone(), *period);
        self.leaves
            .iter()
            .find(|(l, _)| *l == leaf)
            .map(|(_, k)| k.clone())
            .expect("every leaf was resolved")
    }

    /// The script's reply (`{count}`, `{bit}`, `{next, ids...}`), or the
    /// same computed client-side.
    fn run(&self, answer: Answer) -> Op<Vec<i64>> {
        if let Some(e) = &self.refused {
            return Op::fail(e.duplicate());
        }
        let q = self.shared();
        Op::with_env(move |env| match q.script_keys(env) {
            Some((result, ttl)) => q.on_server(env, result, ttl, answer),
            None => q.client_side(answer),
        })
    }

    /// The result key and TTL of a script call, or `None` when the bitmaps
    /// are in several slots of a cluster.
    fn script_keys(&self, env: &Env) -> Option<(String, u64)> {
        let (result, ttl) = match &self.cache {
            Some((k, ttl)) => (k.clone(), *ttl),
            None => (keys::tmp_key(&self.base), 0),
        };
        if !env.is_cluster() {
            return Some((result, ttl));
        }
        let slot = cluster_slot(result.as_bytes());
        self.leaves
            .iter()
            .all(|(_, k)| cluster_slot(k.as_bytes()) == slot)
            .then_some((result, ttl))
    }

    fn on_server(&self, env: &Env, result: String, ttl: u64, answer: Answer) -> Op<Vec<i64>> {
        let newer = env.caps().bitop_diff;
        let program = compile(&self.expr, &|e| self.key_of(e), newer);
        let mut operands: Vec<String> = (0..program.registers)
            .map(|_| keys::tmp_key(&self.base))
            .collect();
        operands.extend(program.inputs);
        let (name, at, limit) = match answer {
            Answer::Count => ("COUNT", 0, 0),
            Answer::Member(id) => ("MEMBER", id, 0),
            Answer::Members(from, limit) => ("MEMBERS", from, limit),
        };
        Op::script(scripts::analytics::query(
            &result,
            &operands,
            newer,
            program.registers as i64,
            name,
            at as i64,
            limit as i64,
            ttl as i64,
            &program.steps,
        ))
    }

    fn client_side(&self, answer: Answer) -> Op<Vec<i64>> {
        let mut distinct: Vec<String> = self.leaves.iter().map(|(_, k)| k.clone()).collect();
        distinct.sort();
        distinct.dedup();
        let mut batch = Batch::new();
        for k in &distinct {
            let mut get = redis::cmd("GET");
            get.arg(k);
            batch.add(k, get);
        }
        let q = self.shared();
        Op::send(batch, move |replies| {
            let bitmaps: Vec<Option<Vec<u8>>> = replies.all()?;
            let of = |e: &Expr| {
                let k = q.key_of(e);
                let i = distinct.binary_search(&k).expect("fetched");
                bitmaps[i].clone().unwrap_or_default()
            };
            let b = eval::eval(&q.expr, &of);
            Ok(answer_of(&b, answer))
        })
    }
}

/// The script's reply computed from the result bitmap `b`.
fn answer_of(b: &[u8], answer: Answer) -> Vec<i64> {
    match answer {
        Answer::Count => vec![eval::count(b) as i64],
        Answer::Member(id) => vec![i64::from(eval::contains(b, id))],
        Answer::Members(from, limit) => {
            let bits = b.len() as u64 * 8;
            let mut out = vec![-1];
            let mut pos = from;
            while out.len() <= limit && pos < bits {
                if eval::contains(b, pos) {
                    out.push(pos as i64);
                }
                pos += 1;
            }
            // As the script: the next id to look at while bits remain.
            if pos < bits {
                out[0] = pos as i64;
            }
            out
        }
    }
}
