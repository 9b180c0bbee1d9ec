//! The guide: how to use every pattern, from Rust and from other languages,
//! on one server and on a cluster, and how to run it in production.
//!
//! These are the chapters of the book in the repository's `docs/`
//! (`docs/SUMMARY.md`; `mdbook build docs` makes the book), one module per
//! chapter, so that they read the same on docs.rs, and their Rust examples
//! are doctests that run against a throwaway server. Start with
//! [`getting_started`]; each pattern has its chapter ([`lock`],
//! [`rate_limit`], [`visits`] ...).

include!(concat!(env!("OUT_DIR"), "/guide.rs"));
