//! What went wrong, in one lowercase line that says what to do: the URL
//! (password masked) and the cause of a connection error, the path of a
//! file error, the server's password and permission refusals in plain
//! words, and the library's typed errors without the client library's
//! Debug text.

use std::fmt;
use std::sync::OnceLock;

use redis_patterns::{Error, ErrorKind};

/// A failed command: the message (one line) and the exit status.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub status: u8,
}

impl Failure {
    /// A failure with exit status 1.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            status: 1,
        }
    }

    /// The same failure with another exit status.
    pub fn status(mut self, status: u8) -> Self {
        self.status = status;
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::new(describe(&e))
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

/// A throwaway server that did not start, in one line.
pub fn start_error(e: &redis_patterns_test_support::StartError) -> Failure {
    use redis_patterns_test_support::StartError as S;
    Failure::new(match e {
        S::NotFound { .. } => e.to_string(),
        S::Exited {
            binary,
            port,
            status,
            ..
        } => format!(
            "`{binary}` exited ({status}) before it answered on 127.0.0.1:{port}: point REDIS_SERVER at a redis-server binary (>= 7.0), or pass --url"
        ),
        S::NoAnswer {
            binary, port, secs, ..
        } => format!(
            "`{binary}` did not answer on 127.0.0.1:{port} within {secs} s: check that it is a redis-server (>= 7.0), or pass --url"
        ),
        S::Spawn { binary, source } => format!("cannot start `{binary}`: {}", io_text(source)),
        other => lower_first(&other.to_string().replace('\n', " ")),
    })
}

pub type CliResult<T = ()> = Result<T, Failure>;

/// The URL the command talks to (password masked), for messages.
static URL: OnceLock<String> = OnceLock::new();

/// Remembers the URL the command connected to.
pub fn set_url(url: &str) {
    let _ = URL.set(mask(url));
}

fn url() -> &'static str {
    URL.get().map(String::as_str).unwrap_or("the server")
}

/// `url` with its password replaced by `***`.
pub fn mask(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or("", |(u, _)| u);
            let masked = if userinfo.contains(':') {
                format!("{user}:***")
            } else {
                "***".to_string()
            };
            format!("{scheme}://{masked}@{host}{path}")
        }
        None => url.to_string(),
    }
}

/// An I/O error's text, lowercase and without `(os error N)`.
pub fn io_text(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => "no such file or directory".to_string(),
        K::PermissionDenied => "permission denied".to_string(),
        K::ConnectionRefused => "connection refused".to_string(),
        K::ConnectionReset => "connection reset by the server".to_string(),
        K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
            "the server closed the connection".to_string()
        }
        K::TimedOut | K::WouldBlock => "no answer in time".to_string(),
        K::AlreadyExists => "it already exists".to_string(),
        K::NotADirectory => "a part of the path is not a directory".to_string(),
        K::IsADirectory => "it is a directory".to_string(),
        _ => {
            let s = e.to_string();
            let s = match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            };
            lower_first(&s)
        }
    }
}

/// A file error: `cannot <what> <path>: <cause>`.
pub fn file(what: &str, path: &std::path::Path, e: &std::io::Error) -> Failure {
    Failure::new(format!("cannot {what} {}: {}", path.display(), io_text(e)))
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    let text = match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    };
    text.trim_end_matches('.').to_string()
}

/// The server error code and detail inside a client library error, also
/// from the pipeline form (`Pipeline failures: [...]`).
fn server_code(e: &redis::RedisError) -> Option<(String, String)> {
    if let Some(code) = e.code() {
        return Some((code.to_string(), e.detail().unwrap_or("").to_string()));
    }
    let errors = e.clone().into_server_errors()?;
    let (_, first) = errors.first()?;
    Some((
        first.code().to_string(),
        first.details().unwrap_or("").to_string(),
    ))
}

/// A server error code, in words, when it needs the operator to act.
fn server_words(code: &str, detail: &str) -> Option<String> {
    let u = url();
    Some(match code {
        "NOAUTH" => format!(
            "the server at {u} needs a password: put it in the url (redis://:PASSWORD@host/)"
        ),
        "WRONGPASS" => format!(
            "the server at {u} refused the user name or password in the url: check them (redis://USER:PASSWORD@host/)"
        ),
        "NOPERM" => format!(
            "the server at {u} denies this to the url's user ({}): grant it in the user's ACL",
            lower_first(detail)
        ),
        "LOADING" => format!("the server at {u} is loading its data: try again when it is done"),
        "READONLY" => format!("{u} is a replica: point --url at the primary"),
        "OOM" => format!(
            "the server at {u} is out of memory (maxmemory): free memory or raise maxmemory"
        ),
        _ => return None,
    })
}

/// Why the TLS handshake refused the server's certificate, when that is
/// what the error (or one of its causes) says.
fn certificate_refusal(e: &redis::RedisError) -> Option<String> {
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if text.to_lowercase().contains("certificate") {
            return Some(lower_first(text.trim()));
        }
        cause = c.source();
    }
    None
}

/// A client library error in words.
fn redis_words(e: &redis::RedisError) -> String {
    let u = url();
    if let Some((code, detail)) = server_code(e) {
        if let Some(words) = server_words(&code, &detail) {
            return words;
        }
        return format!("the server at {u} answered {code} {}", lower_first(&detail));
    }
    let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
    match e.kind() {
        redis::ErrorKind::InvalidClientConfig => format!(
            "cannot use the url {u}: {} (check --url or REDIS_URL)",
            lower_first(e.detail().unwrap_or("it does not parse"))
        ),
        redis::ErrorKind::AuthenticationFailed => format!(
            "the server at {u} refused the password in the url: check it (redis://:PASSWORD@host/)"
        ),
        _ if e.is_connection_refusal() => format!("cannot connect to {u}: connection refused"),
        _ if e.is_timeout() => format!("no answer from {u} in time"),
        _ if let Some(reason) = certificate_refusal(e) => format!(
            "cannot verify the TLS certificate of {u} ({reason}): give the CA that signed it with --tls-ca FILE"
        ),
        _ if e.is_connection_dropped() || e.is_io_error() => {
            let cause = io.map_or_else(|| "the connection was closed".to_string(), io_text);
            format!("lost the connection to {u}: {cause}")
        }
        redis::ErrorKind::UnexpectedReturnType | redis::ErrorKind::Parse => format!(
            "unexpected reply from {u} ({}): is it a redis server >= 7.0?",
            e.category()
        ),
        _ => format!(
            "{u}: {}",
            lower_first(e.detail().unwrap_or_else(|| e.category()))
        ),
    }
}

/// Any library error in one line.
pub fn describe(e: &Error) -> String {
    match e.kind() {
        ErrorKind::Redis(re) => redis_words(re),
        ErrorKind::Server { code, message, .. } => server_words(code, message)
            .unwrap_or_else(|| format!("the server at {} answered {code} {message}", url())),
        ErrorKind::PipelineInterrupted { .. } => format!(
            "the server at {} lost its scripts (SCRIPT FLUSH) again and again while this ran: try again",
            url()
        ),
        _ => lower_first(&e.to_string()),
    }
}

/// Whether a failed batch may be sent again: the connection broke or timed
/// out, the server was loading, busy, failing over, or lost its scripts.
pub fn transient(e: &Error) -> bool {
    e.is_retryable()
}
