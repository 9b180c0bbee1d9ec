//! A loopback TCP proxy in front of a server that injects faults: it can
//! cut a connection right after the server answered (the request ran, its
//! reply never arrives — the "connection reset while waiting for the
//! reply" case), and answer chosen commands with an error of the server's
//! (`LOADING`, `UNBLOCKED` …) instead of running them, in their place in
//! the pipeline. Included with `#[path = "support/proxy.rs"] mod proxy;`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which commands to refuse: a test on the command's words (its name
/// first, as sent).
pub type Matches = fn(&[Vec<u8>]) -> bool;

/// The commands to refuse, with which error, how many more times.
struct Refusal {
    matches: Matches,
    error: String,
    left: usize,
    refused: usize,
}

type Refusals = Arc<Mutex<Refusal>>;

/// The proxy; stops accepting when dropped (open connections end with
/// their server or client).
pub struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    cuts: Arc<AtomicUsize>,
    refusal: Refusals,
    stop: Arc<AtomicBool>,
}

/// Whether `cmd`'s name is `name` (any case).
pub fn named(cmd: &[Vec<u8>], name: &str) -> bool {
    cmd.first()
        .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
}

/// A script call: `EVALSHA` / `EVAL` / `FCALL` (either call mode).
pub fn script_call(cmd: &[Vec<u8>]) -> bool {
    ["EVALSHA", "EVAL", "FCALL"].iter().any(|n| named(cmd, n))
}

impl Proxy {
    /// Listens on a free loopback port, forwarding to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let port = listener.local_addr().expect("address").port();
        let (cut, cuts, stop) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let refusal = Arc::new(Mutex::new(Refusal {
            matches: |_| false,
            error: String::new(),
            left: 0,
            refused: 0,
        }));
        let (c, n, s, r) = (cut.clone(), cuts.clone(), stop.clone(), refusal.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client
                            .set_nonblocking(false)
                            .expect("blocking client socket");
                        let server = TcpStream::connect(("127.0.0.1", upstream))
                            .expect("connect to the server");
                        forward(client, server, c.clone(), n.clone(), r.clone());
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Proxy {
            port,
            cut,
            cuts,
            refusal,
            stop,
        }
    }

    /// `redis://127.0.0.1:<proxy port>/`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The next bytes any server connection sends back are dropped, and
    /// that connection is closed on both sides.
    pub fn cut_next_reply(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// How many replies were cut so far.
    pub fn cuts(&self) -> usize {
        self.cuts.load(Ordering::SeqCst)
    }

    /// The next `times` commands that `matches` picks (on any connection)
    /// are not run: the server runs `EVAL "return
    /// redis.error_reply(ARGV[1])" 0 <error>` in their place, so the client
    /// reads `-<error>` as their reply, in its place in the pipeline.
    /// Replaces an earlier refusal; `times` 0 stops refusing.
    pub fn refuse(&self, matches: Matches, error: &str, times: usize) {
        let mut r = self.refusal.lock().unwrap();
        (r.matches, r.error, r.left, r.refused) = (matches, error.to_string(), times, 0);
    }

    /// How many commands the current refusal answered so far.
    pub fn refused(&self) -> usize {
        self.refusal.lock().unwrap().refused
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn forward(
    client: TcpStream,
    server: TcpStream,
    cut: Arc<AtomicBool>,
    cuts: Arc<AtomicUsize>,
    refusal: Refusals,
) {
    let (c_read, s_write) = (
        client.try_clone().expect("clone socket"),
        server.try_clone().expect("clone socket"),
    );
    requests(c_read, s_write, refusal);
    pump(server, client, move || {
        let now = cut.swap(false, Ordering::SeqCst);
        if now {
            cuts.fetch_add(1, Ordering::SeqCst);
        }
        now
    });
}

/// In a thread: copies what `from` sends to `to` until either side ends or
/// `cut()` says to drop the bytes just read; then closes both.
fn pump(mut from: TcpStream, mut to: TcpStream, cut: impl Fn() -> bool + Send + 'static) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if cut() || to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}

/// In a thread: copies the commands `from` sends to `to` until either side
/// ends, replacing those the refusal picks; then closes both. Commands are
/// RESP arrays of bulk strings (as every client of the tests sends them);
/// anything else is copied as it is.
fn requests(mut from: TcpStream, mut to: TcpStream, refusal: Refusals) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        let mut pending: Vec<u8> = Vec::new();
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            }
            let mut out = Vec::new();
            let mut at = 0;
            while let Some((cmd, len)) = parse_command(&pending[at..]) {
                let raw = &pending[at..at + len];
                out.extend_from_slice(&refused(&refusal, &cmd).unwrap_or_else(|| raw.to_vec()));
                at += len;
            }
            if at == 0 && pending.first().is_some_and(|&b| b != b'*') {
                // Not a RESP array: copied as it is.
                at = pending.len();
                out.extend_from_slice(&pending);
            }
            pending.drain(..at);
            if to.write_all(&out).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}

/// The command to send instead of `cmd` when the refusal picks it.
fn refused(refusal: &Refusals, cmd: &[Vec<u8>]) -> Option<Vec<u8>> {
    let mut r = refusal.lock().unwrap();
    if r.left == 0 || !(r.matches)(cmd) {
        return None;
    }
    r.left -= 1;
    r.refused += 1;
    let words: [&[u8]; 4] = [
        b"EVAL",
        b"return redis.error_reply(ARGV[1])",
        b"0",
        r.error.as_bytes(),
    ];
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n", w.len()).as_bytes());
        out.extend_from_slice(w);
        out.extend_from_slice(b"\r\n");
    }
    Some(out)
}

/// One whole command at the start of `buf` (`*<n>` then `n` bulk strings):
/// its words and its length in bytes; `None` when incomplete.
fn parse_command(buf: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    fn line(buf: &[u8], at: usize, lead: u8) -> Option<(usize, usize)> {
        if buf.get(at) != Some(&lead) {
            return None;
        }
        let end = at + buf[at..].windows(2).position(|w| w == b"\r\n")?;
        let n = std::str::from_utf8(&buf[at + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    }
    let (count, mut at) = line(buf, 0, b'*')?;
    let mut words = Vec::with_capacity(count);
    for _ in 0..count {
        let (len, start) = line(buf, at, b'$')?;
        if buf.len() < start + len + 2 {
            return None;
        }
        words.push(buf[start..start + len].to_vec());
        at = start + len + 2;
    }
    Some((words, at))
}
