//! Where a page's examples run: a throwaway server (or a 3-node cluster, or
//! a TLS server, as the page's `<!-- docs-test: ... -->` says), a fresh
//! working directory, and a PATH whose `redis-patterns` is the binary under
//! test and whose `redis-cli` talks to that server. `REDIS_URL` names it, so
//! the examples show no URL: the command line and the examples of every
//! language read `REDIS_URL`, else redis://127.0.0.1:6379/.
//!
//! The pages show the default ports (6379; a cluster's nodes 7000, 7001,
//! 7002; TLS 6380): the session maps them to the real ones in what runs and
//! back in what is printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use redis_patterns_test_support::{LocalCluster, LocalServer, TlsFiles};

use crate::common::python_path;

/// What a page's examples need.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Server,
    Cluster,
    Tls,
}

/// Held for their `Drop`: the servers stop with the session.
#[allow(dead_code)]
enum Servers {
    One(LocalServer),
    Cluster(LocalCluster),
    Tls(LocalServer, TlsFiles),
}

/// What one command printed and its exit status.
pub struct Ran {
    pub lines: Vec<String>,
    pub status: i32,
}

pub struct Session {
    _servers: Servers,
    pub dir: PathBuf,
    env: Vec<(String, String)>,
    /// (shown port, real port)
    ports: Vec<(u16, u16)>,
    exported: std::cell::RefCell<Vec<String>>,
}

fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

impl Session {
    pub fn start(kind: Kind, tag: &str) -> Session {
        let dir = std::env::temp_dir().join(format!("rp-docs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bin = dir.join(".bin");
        std::fs::create_dir_all(&bin).unwrap();
        let (servers, url, port, ports) = match kind {
            Kind::Server => {
                let s = LocalServer::start().expect("a throwaway redis-server");
                let (url, port) = (s.url(), s.port());
                (Servers::One(s), url, port, vec![(6379, port)])
            }
            Kind::Cluster => {
                let c = LocalCluster::start().expect("a throwaway 3-node cluster");
                let ports: Vec<(u16, u16)> = c
                    .nodes()
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (7000 + i as u16, n.port()))
                    .collect();
                let (url, port) = (c.nodes()[0].url(), c.nodes()[0].port());
                (Servers::Cluster(c), url, port, ports)
            }
            Kind::Tls => {
                let files = TlsFiles::generate().expect("throwaway certificates");
                let s = LocalServer::start_tls(&files, &[]).expect("a server built with TLS");
                let (url, port) = (s.tls_url().unwrap(), s.tls_port().unwrap());
                (Servers::Tls(s, files), url, port, vec![(6380, port)])
            }
        };
        let mut env = vec![
            ("REDIS_URL".to_string(), url),
            (
                "PATH".to_string(),
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            ),
        ];
        let mut tls_args = String::new();
        if let Servers::Tls(_, files) = &servers {
            let ca = files.ca_file().display().to_string();
            tls_args = format!(" --tls --cacert '{ca}'");
            env.push(("REDIS_TLS_CA".to_string(), ca));
        }
        std::os::unix::fs::symlink(
            env!("CARGO_BIN_EXE_redis-patterns"),
            bin.join("redis-patterns"),
        )
        .unwrap();
        let cli = redis_patterns_test_support::cli_binary();
        let real = Command::new("sh")
            .args(["-c", &format!("command -v '{cli}'")])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        assert!(!real.is_empty(), "{cli} is not on PATH");
        // --no-raw: replies as redis-cli shows them on a terminal.
        write_exec(
            &bin.join("redis-cli"),
            &format!("#!/bin/sh\nexec '{real}' -h 127.0.0.1 -p {port}{tls_args} --no-raw \"$@\"\n"),
        );
        Session {
            _servers: servers,
            dir,
            env,
            ports,
            exported: Default::default(),
        }
    }

    /// `text` with the ports the pages show replaced by the real ones.
    fn to_real(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (shown, real) in &self.ports {
            for (a, b) in [(":", ""), ("-p ", "")] {
                out = out.replace(&format!("{a}{shown}{b}"), &format!("{a}{real}{b}"));
            }
        }
        out
    }

    /// `text` with the real ports replaced by the ones the pages show.
    fn to_shown(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (shown, real) in &self.ports {
            out = out.replace(&format!(":{real}"), &format!(":{shown}"));
            out = out.replace(&format!("port {real}"), &format!("port {shown}"));
        }
        out
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("timeout");
        cmd.arg("120").arg(program).current_dir(&self.dir);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Runs the commands of a console block in one shell, in order; what
    /// each printed.
    pub fn console(&self, commands: &[String]) -> Result<Vec<Ran>, String> {
        const MARK: &str = "@@docs-test@@";
        let mut script = String::from("exec 2>&1\n");
        for c in commands {
            script.push_str(&self.to_real(c));
            script.push_str(&format!("\nprintf '\\n{MARK} %d\\n' \"$?\"\n"));
        }
        let out = self
            .command("bash")
            .args(["--noprofile", "--norc", "-c", &script])
            .output()
            .map_err(|e| format!("bash: {e}"))?;
        let text = self.to_shown(&String::from_utf8_lossy(&out.stdout));
        let mut ran = Vec::new();
        let mut rest = text.as_str();
        for _ in commands {
            let Some(at) = rest.find(&format!("\n{MARK} ")) else {
                return Err(format!(
                    "the session stopped early (exit {:?}):\n{rest}",
                    out.status.code()
                ));
            };
            let printed = &rest[..at];
            let after = &rest[at + MARK.len() + 2..];
            let end = after.find('\n').unwrap_or(after.len());
            let status = after[..end].trim().parse().unwrap_or(-1);
            rest = after.get(end + 1..).unwrap_or("");
            ran.push(Ran {
                lines: printed.lines().map(str::to_string).collect(),
                status,
            });
        }
        Ok(ran)
    }

    /// Exports the client of `lang` to DIR/py, DIR/php or DIR/ts once.
    fn export(&self, lang: &str, sub: &str) {
        if self.exported.borrow().iter().any(|l| l == lang) {
            return;
        }
        crate::support::stdout_of(
            self.command(env!("CARGO_BIN_EXE_redis-patterns"))
                .args(["export", "--lang", lang, sub]),
            &format!("export --lang {lang}"),
        );
        self.exported.borrow_mut().push(lang.to_string());
    }

    /// Runs `cmd` on `code` written to `file` in the working directory;
    /// `Err` with what it printed when it fails.
    fn interpret(&self, file: &str, code: &str, cmd: &mut Command) -> Result<(), String> {
        std::fs::write(self.dir.join(file), self.to_real(code)).unwrap();
        run_file(file, cmd)
    }

    /// A Python block, with the exported Python client on PYTHONPATH (as
    /// `pip install ./py` installs it).
    pub fn python(&self, n: usize, code: &str) -> Result<(), String> {
        self.export("python", "py");
        let mut cmd = self.command("python3");
        cmd.env("PYTHONPATH", python_path(&self.dir.join("py")));
        self.interpret(&format!("block{n}.py"), code, &mut cmd)
    }

    /// A PHP block (`<?php` added when it lacks it), run beside the
    /// exported PHP client (`require 'php/autoload.php'`).
    pub fn php(&self, n: usize, code: &str) -> Result<(), String> {
        self.export("php", "php");
        let code = if code.starts_with("<?php") {
            code.to_string()
        } else {
            format!("<?php\n{code}")
        };
        self.interpret(&format!("block{n}.php"), &code, &mut self.command("php"))
    }

    /// A TypeScript block: an ES module (top-level `await` allowed),
    /// compiled by `tsc --strict` against the exported TypeScript client (as
    /// `npm install ./ts` installs it) and ioredis, then run by node. Needs
    /// REDIS_PATTERNS_NODE_MODULES (a node_modules with ioredis, typescript
    /// and @types/node: `.ci/run` installs them).
    pub fn typescript(&self, n: usize, code: &str) -> Result<(), String> {
        let modules = std::env::var("REDIS_PATTERNS_NODE_MODULES").map_err(|_| {
            "REDIS_PATTERNS_NODE_MODULES is not set: point it at a node_modules with ioredis, typescript and @types/node (.ci/run installs them)".to_string()
        })?;
        self.export("typescript", "ts");
        let nm = self.dir.join("node_modules");
        if !nm.exists() {
            std::fs::create_dir_all(&nm).unwrap();
            std::os::unix::fs::symlink(self.dir.join("ts"), nm.join("redis-patterns")).unwrap();
            for entry in std::fs::read_dir(&modules).map_err(|e| format!("{modules}: {e}"))? {
                let entry = entry.unwrap();
                let _ = std::os::unix::fs::symlink(entry.path(), nm.join(entry.file_name()));
            }
        }
        let file = format!("block{n}.mts");
        std::fs::write(self.dir.join(&file), self.to_real(code)).unwrap();
        let tsc = Path::new(&modules).join("typescript/bin/tsc");
        let mut compile = self.command("node");
        compile.arg(tsc).args([
            "--strict",
            "--target",
            "es2022",
            "--module",
            "nodenext",
            "--skipLibCheck",
            "--types",
            "node",
        ]);
        let out = compile.arg(&file).output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "tsc --strict refused it:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        run_file(&format!("block{n}.mjs"), &mut self.command("node"))
    }
}

/// Runs `cmd file`; `Err` with what it printed when it fails.
fn run_file(file: &str, cmd: &mut Command) -> Result<(), String> {
    let out = cmd.arg(file).output().map_err(|e| e.to_string())?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
