//! A loopback TCP proxy in front of a server that can cut a connection right
//! after the server answered: the request ran, its reply never arrives —
//! the "connection reset while waiting for the reply" case. Included with
//! `#[path = "support/proxy.rs"] mod proxy;`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// The proxy; stops accepting when dropped (open connections end with
/// their server or client).
pub struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    cuts: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
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
        let (c, n, s) = (cut.clone(), cuts.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client
                            .set_nonblocking(false)
                            .expect("blocking client socket");
                        let server = TcpStream::connect(("127.0.0.1", upstream))
                            .expect("connect to the server");
                        forward(client, server, c.clone(), n.clone());
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Proxy {
            port,
            cut,
            cuts,
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
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn forward(client: TcpStream, server: TcpStream, cut: Arc<AtomicBool>, cuts: Arc<AtomicUsize>) {
    let (c_read, s_write) = (
        client.try_clone().expect("clone socket"),
        server.try_clone().expect("clone socket"),
    );
    pump(c_read, s_write, || false);
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
