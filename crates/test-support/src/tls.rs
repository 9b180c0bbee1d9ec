//! A throwaway certificate authority for TLS servers on loopback: `openssl`
//! (Debian's, which `.ci/run` installs) writes a CA and a server
//! certificate for `127.0.0.1` and `localhost`, signed by it, into a fresh
//! temporary directory that is removed on drop.
//!
//! [`LocalServer::start_tls`](crate::LocalServer::start_tls) and
//! [`ClusterBuilder::tls`](crate::ClusterBuilder::tls) start servers that
//! listen for TLS on a port of their own beside the plain one (which the
//! harness keeps for `PING` and `--cluster create`); clients then verify the
//! server against [`TlsFiles::ca_pem`], never accepting any certificate.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;

use crate::{COUNTER, StartError};

/// A CA and a server certificate signed by it, as PEM files.
#[derive(Debug)]
pub struct TlsFiles {
    dir: PathBuf,
}

impl TlsFiles {
    /// Makes a fresh CA and a server certificate (for `127.0.0.1`, `::1`
    /// and `localhost`, valid one day) with `openssl`.
    pub fn generate() -> Result<Self, StartError> {
        let dir = std::env::temp_dir().join(format!(
            "redis-patterns-tls-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let files = Self { dir };
        let ext = files.path("server.ext");
        std::fs::write(
            &ext,
            "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n",
        )?;
        let (ca_key, ca, key, csr, cert) = (
            files.path("ca.key"),
            files.path("ca.crt"),
            files.path("server.key"),
            files.path("server.csr"),
            files.path("server.crt"),
        );
        let s = |p: &Path| p.to_string_lossy().into_owned();
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=redis-patterns test CA",
            "-keyout",
            &s(&ca_key),
            "-out",
            &s(&ca),
        ])?;
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            &s(&key),
            "-out",
            &s(&csr),
        ])?;
        openssl(&[
            "x509",
            "-req",
            "-in",
            &s(&csr),
            "-CA",
            &s(&ca),
            "-CAkey",
            &s(&ca_key),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            &s(&ext),
            "-out",
            &s(&cert),
        ])?;
        Ok(files)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The CA certificate's file.
    pub fn ca_file(&self) -> PathBuf {
        self.path("ca.crt")
    }

    /// The CA certificate, PEM (a client's root certificate).
    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.ca_file()).expect("the CA certificate was written")
    }

    /// The server's arguments: its certificate, key and CA, clients not
    /// asked for a certificate.
    pub(crate) fn server_args(&self) -> Vec<String> {
        let s = |n: &str| self.path(n).to_string_lossy().into_owned();
        vec![
            "--tls-cert-file".into(),
            s("server.crt"),
            "--tls-key-file".into(),
            s("server.key"),
            "--tls-ca-cert-file".into(),
            s("ca.crt"),
            "--tls-auth-clients".into(),
            "no".into(),
        ]
    }
}

impl Drop for TlsFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn openssl(args: &[&str]) -> Result<(), StartError> {
    let out = Command::new("openssl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| crate::spawn_error("openssl", e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(StartError::Tls(format!(
        "openssl {} failed: {}",
        args.first().unwrap_or(&""),
        String::from_utf8_lossy(&out.stderr)
    )))
}
