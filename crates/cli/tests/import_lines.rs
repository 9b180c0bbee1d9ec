//! The line-oriented import behind `import sharded-hash` (bounded lines,
//! rejected lines counted by line number) against real servers, every body
//! through both drivers.

mod common;
#[path = "../../../tests/support/everywhere.rs"]
mod everywhere;
#[path = "../../../tests/support/mod.rs"]
mod support;

#[allow(dead_code)]
#[path = "../src/lines.rs"]
mod lines;

#[allow(dead_code)]
#[path = "../src/import_lines.rs"]
mod import_lines;

use common::write_file;
use import_lines::{LineFormat, LineOptions, LineRejection, import_lines};
use redis_patterns::sharded_hash::{ImportOptions, RejectReason, ShardedHash, Sharding};
use support::Driver;

fn reader(path: &std::path::Path) -> std::io::BufReader<std::fs::File> {
    std::io::BufReader::new(std::fs::File::open(path).unwrap())
}

fn get(d: &mut Driver, h: &ShardedHash, field: &str) -> Option<String> {
    d.run(h.get::<String>(field)).unwrap()
}

#[test]
fn import_counts_blank_huge_and_invalid_lines_and_keeps_stored_values() {
    let server = support::server();
    let dir = server.dir().join("import");
    std::fs::create_dir_all(&dir).unwrap();
    let huge = vec![b'x'; 10 << 20];
    let path = write_file(
        &dir,
        "in.txt",
        &[
            b"zero\n",
            b"\n",
            &huge,
            b"\n",
            b"bad \xff\xfe utf8\n",
            b"four\r\n",
            b"five",
        ],
    );
    support::each_driver(&server, |d| {
        let h = ShardedHash::new("imp", 3).unwrap();
        // Already stored before the import: must survive.
        assert_eq!(d.run(h.set("4", "kept")).unwrap(), Some(true));
        let options = LineOptions {
            max_line: 1 << 20,
            import: ImportOptions {
                batch: 2,
                ..ImportOptions::default()
            },
            ..LineOptions::default()
        };
        let report = d.run(import_lines(&h, reader(&path), options)).unwrap();
        assert_eq!(report.lines, 6);
        assert_eq!(
            (report.inserted, report.present, report.rejected),
            (2, 1, 3)
        );
        let reasons: Vec<(u64, LineRejection)> = report
            .rejections
            .iter()
            .map(|r| (r.line, r.reason.clone()))
            .collect();
        assert_eq!(
            reasons,
            vec![
                (2, LineRejection::Blank),
                (3, LineRejection::TooLong(10 << 20)),
                (4, LineRejection::InvalidUtf8),
            ]
        );
        // Field = 0-based line index, as the PHP recipe's explode() keys.
        let got: Vec<Option<String>> = d.run(h.get_many(&["0", "1", "2", "3", "4", "5"])).unwrap();
        assert_eq!(
            got,
            vec![
                Some("zero".into()),
                None,
                None,
                None,
                Some("kept".into()),
                Some("five".into())
            ]
        );
        assert_eq!(d.run(h.len()).unwrap(), 3);
        assert_eq!(report.bytes, std::fs::metadata(&path).unwrap().len());
    });
}

#[test]
fn import_tsv_and_strict_value_limit() {
    let server = support::server();
    let dir = server.dir().join("import");
    std::fs::create_dir_all(&dir).unwrap();
    let long = format!("k\t{}\n", "y".repeat(65));
    let path = write_file(
        &dir,
        "in.tsv",
        &[
            b"a\t1\n",
            b"no tab here\n",
            b"\tempty field\n",
            long.as_bytes(),
            b"b\t2\tx\n",
            b"a\t9\n",
        ],
    );
    support::each_driver(&server, |d| {
        let h = ShardedHash::new("tsv", 2).unwrap();
        let options = LineOptions {
            format: LineFormat::Tsv,
            ..LineOptions::default()
        };
        let report = d.run(import_lines(&h, reader(&path), options)).unwrap();
        assert_eq!(
            (report.inserted, report.present, report.rejected),
            (2, 1, 3)
        );
        assert_eq!(
            report.rejections[2].reason,
            LineRejection::Item(RejectReason::ValueTooLong(65))
        );
        assert_eq!(report.rejections[2].line, 4);
        assert_eq!(get(d, &h, "a").as_deref(), Some("1"));
        assert_eq!(get(d, &h, "b").as_deref(), Some("2\tx"));
        assert_eq!(get(d, &h, "k"), None);
        // Options are checked before anything is read or sent.
        let bad = LineOptions {
            max_line: 0,
            ..LineOptions::default()
        };
        assert!(d.run(import_lines(&h, reader(&path), bad)).is_err());
    });
}

/// Streaming import of lines, strict and not, through one driver; returns
/// what it answered and the data it wrote.
fn line_imports(d: &mut Driver) -> (Vec<String>, everywhere::HashDump) {
    let mut log = Vec::new();
    let text = "alpha\n\nbeta\ngamma\n".repeat(40);
    let lines = ShardedHash::new("lines", 8).unwrap();
    let options = LineOptions {
        import: ImportOptions {
            batch: 17,
            ..ImportOptions::default()
        },
        ..LineOptions::default()
    };
    let report = d
        .run(import_lines(
            &lines,
            std::io::Cursor::new(text.into_bytes()),
            options,
        ))
        .unwrap();
    assert_eq!(report.inserted, 120);
    assert_eq!(report.rejected, 40);
    log.push(format!("import_lines: {report:?}"));
    let tsv = "a\t1\nb\t2\nno tab\nc\t3\n";
    let loose_lines = ShardedHash::builder("tsv", Sharding::Crc32 { shards: 8 })
        .strict(false)
        .build()
        .unwrap();
    let options = LineOptions {
        format: LineFormat::Tsv,
        import: ImportOptions {
            batch: 2,
            ..ImportOptions::default()
        },
        ..LineOptions::default()
    };
    let report = d
        .run(import_lines(&loose_lines, tsv.as_bytes(), options))
        .unwrap();
    log.push(format!("import_lines tsv: {report:?}"));
    let got = d
        .run(loose_lines.get_many::<String, _>(&["a", "b", "c"]))
        .unwrap();
    log.push(format!("tsv get: {got:?}"));
    let keys = lines.shard_keys().chain(loose_lines.shard_keys());
    let data = everywhere::dump_hashes(d, keys);
    (log, data)
}

#[test]
fn line_imports_write_the_same_on_one_server_and_a_cluster() {
    let server = support::server();
    let cluster = support::cluster();
    everywhere::same_everywhere(&server, &cluster, line_imports);
}
