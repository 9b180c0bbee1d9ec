//! Every example of `examples/` (`cargo run --example <pattern>`, one per
//! pattern) runs here against a throwaway server. Each example's `run(url)`
//! is its whole body; its `main` only picks the server (`REDIS_URL`, else a
//! throwaway one), so the tests never talk to a server they did not start.

mod support;

macro_rules! examples {
    ($($name:ident: $path:literal),* $(,)?) => {
        $(
            #[allow(dead_code)]
            #[path = $path]
            mod $name;

            #[test]
            fn $name() {
                let server = support::server();
                $name::run(&server.url())
                    .unwrap_or_else(|e| panic!("cargo run --example {}: {e}", stringify!($name)));
            }
        )*

        /// Every example file is run above, and every pattern has one.
        #[test]
        fn every_pattern_has_an_example_and_every_example_runs() {
            let ran = [$(stringify!($name)),*];
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
            let mut files: Vec<String> = std::fs::read_dir(dir)
                .expect("examples/")
                .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            files.sort();
            let mut listed: Vec<String> = ran.iter().map(|s| s.to_string()).collect();
            listed.sort();
            assert_eq!(files, listed, "tests/examples.rs runs exactly the files of examples/");
            for c in redis_patterns::contract::PatternContract::all() {
                assert!(ran.contains(&c.name.as_str()), "the pattern {} has no example", c.name);
            }
        }
    };
}

examples!(
    analytics: "../examples/analytics.rs",
    bloom: "../examples/bloom.rs",
    expiring_map: "../examples/expiring_map.rs",
    layout: "../examples/layout.rs",
    lock: "../examples/lock.rs",
    login_log: "../examples/login_log.rs",
    packed: "../examples/packed.rs",
    rate_limit: "../examples/rate_limit.rs",
    rolling: "../examples/rolling.rs",
    rwlock: "../examples/rwlock.rs",
    semaphore: "../examples/semaphore.rs",
    sharded_hash: "../examples/sharded_hash.rs",
    signin: "../examples/signin.rs",
    visits: "../examples/visits.rs",
);
