//! TLS for every listener of a real node, with rustls (ring's cryptography; no OpenSSL): the
//! certificates, keys and CAs read from PEM files, and the rustls configurations built from
//! them.
//!
//! - [`server_config`]: what a server presents (its certificate chain and key) and, with a CA,
//!   the client certificates it verifies (required with `client_cert_auth`, as etcd's
//!   `--client-cert-auth`).
//! - [`client_config`]: the CA a client verifies the server with (only that CA: no system
//!   roots), and the client certificate it presents, if any.
//! - [`PeerTls`]: mutual TLS between peers, both sides from one certificate, key and CA (etcd's
//!   `--peer-cert-file`, `--peer-key-file`, `--peer-trusted-ca-file`).
//!
//! Every error is a [`TlsError`] naming the file and what is wrong with it, in one line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("{flag} {}: {source}", path.display())]
    Read {
        /// The flag that named the file.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// A file holds no usable PEM item of the kind needed.
    #[error("{flag} {}: {reason}", path.display())]
    Pem {
        /// The flag that named the file.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The certificates and key do not make a configuration (a key that is not the
    /// certificate's, an unsupported algorithm, a CA that is not one).
    #[error("{what}: {reason}")]
    Config {
        /// Which configuration (e.g. `--cert-file/--key-file`).
        what: String,
        /// What rustls said.
        reason: String,
    },
    /// Flags that do not go together (e.g. `--client-cert-auth` without a CA).
    #[error("{0}")]
    Flags(String),
}

/// The cryptography every configuration uses: rustls with ring.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Makes ring the process's default rustls provider, for libraries that build configurations
/// with the default (tonic's TLS server). Harmless when a default is installed already.
pub fn install_default_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn read(flag: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { flag, path: path.to_path_buf(), source })
}

/// The certificates of a PEM file (at least one).
pub fn read_certs(flag: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(flag, path)?;
    let bad = |reason: String| TlsError::Pem { flag, path: path.to_path_buf(), reason };
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not a PEM certificate file ({e})")))?;
    if certs.is_empty() {
        return Err(bad("no certificate in it (expected -----BEGIN CERTIFICATE-----)".into()));
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn read_key(flag: &'static str, path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(flag, path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| TlsError::Pem {
        flag,
        path: path.to_path_buf(),
        reason: format!("no private key in it (expected -----BEGIN PRIVATE KEY-----; {e})"),
    })
}

/// The CA certificates of a PEM file as a root store.
pub fn read_roots(flag: &'static str, path: &Path) -> Result<Arc<RootCertStore>, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in read_certs(flag, path)? {
        roots.add(cert).map_err(|e| TlsError::Pem {
            flag,
            path: path.to_path_buf(),
            reason: format!("not a usable CA certificate ({e})"),
        })?;
    }
    Ok(Arc::new(roots))
}

/// The files a TLS server is configured with, as etcd's flags name them.
#[derive(Clone, Debug, Default)]
pub struct ServerFiles {
    /// The server's certificate chain (`--cert-file`).
    pub cert: PathBuf,
    /// Its private key (`--key-file`).
    pub key: PathBuf,
    /// The CA client certificates are verified with (`--trusted-ca-file`).
    pub trusted_ca: Option<PathBuf>,
    /// Every client must present a certificate the CA signed (`--client-cert-auth`).
    pub client_cert_auth: bool,
}

/// A server configuration: `files`' certificate and key; with a CA, client certificates are
/// verified (and required with `client_cert_auth`). `alpn`: the protocols offered, in order
/// of preference.
pub fn server_config(files: &ServerFiles, alpn: &[&[u8]]) -> Result<Arc<ServerConfig>, TlsError> {
    let certs = read_certs("--cert-file", &files.cert)?;
    let key = read_key("--key-file", &files.key)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config { what: "TLS versions".into(), reason: e.to_string() })?;
    let builder = match (&files.trusted_ca, files.client_cert_auth) {
        (None, true) => {
            return Err(TlsError::Flags(
                "--client-cert-auth needs --trusted-ca-file (the CA client certificates are verified with)"
                    .into(),
            ));
        }
        (None, false) => builder.with_no_client_auth(),
        (Some(ca), required) => {
            let roots = read_roots("--trusted-ca-file", ca)?;
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(roots, provider());
            let verifier = if required { verifier } else { verifier.allow_unauthenticated() };
            let verifier = verifier.build().map_err(|e| TlsError::Config {
                what: format!("--trusted-ca-file {}", ca.display()),
                reason: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| TlsError::Config {
        what: format!("--cert-file {} with --key-file {}", files.cert.display(), files.key.display()),
        reason: e.to_string(),
    })?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// A client configuration that trusts only the CA in `ca` and presents `identity` (a
/// certificate chain file and its key file) when given. `flags` names the flags the files
/// came from, for errors: (CA, certificate, key).
pub fn client_config(
    ca: &Path,
    identity: Option<(&Path, &Path)>,
    flags: (&'static str, &'static str, &'static str),
) -> Result<Arc<ClientConfig>, TlsError> {
    let roots = read_roots(flags.0, ca)?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config { what: "TLS versions".into(), reason: e.to_string() })?
        .with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let certs = read_certs(flags.1, cert)?;
            let k = read_key(flags.2, key)?;
            builder.with_client_auth_cert(certs, k).map_err(|e| TlsError::Config {
                what: format!("{} {} with {} {}", flags.1, cert.display(), flags.2, key.display()),
                reason: e.to_string(),
            })?
        }
    };
    Ok(Arc::new(config))
}

/// Mutual TLS between peers: each side presents its certificate and verifies the other's
/// against the peer CA. A dialler checks that the certificate names the host it dialled.
#[derive(Clone)]
pub struct PeerTls {
    /// What the listener accepts with (client certificates required).
    pub acceptor: tokio_rustls::TlsAcceptor,
    /// What a writer dials with.
    pub connector: tokio_rustls::TlsConnector,
}

impl std::fmt::Debug for PeerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerTls(…)")
    }
}

impl PeerTls {
    /// From etcd's peer flags: `--peer-cert-file`, `--peer-key-file`, `--peer-trusted-ca-file`.
    pub fn from_files(cert: &Path, key: &Path, ca: &Path) -> Result<PeerTls, TlsError> {
        let rename = |e: TlsError| match e {
            TlsError::Read { flag, path, source } => TlsError::Read { flag: peer_flag(flag), path, source },
            TlsError::Pem { flag, path, reason } => TlsError::Pem { flag: peer_flag(flag), path, reason },
            TlsError::Config { what, reason } => {
                TlsError::Config { what: what.replace("--", "--peer-"), reason }
            }
            other => other,
        };
        let files = ServerFiles {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            trusted_ca: Some(ca.to_path_buf()),
            client_cert_auth: true,
        };
        let server = server_config(&files, &[]).map_err(rename)?;
        let client = client_config(
            ca,
            Some((cert, key)),
            ("--peer-trusted-ca-file", "--peer-cert-file", "--peer-key-file"),
        )?;
        Ok(PeerTls {
            acceptor: tokio_rustls::TlsAcceptor::from(server),
            connector: tokio_rustls::TlsConnector::from(client),
        })
    }
}

fn peer_flag(flag: &'static str) -> &'static str {
    match flag {
        "--cert-file" => "--peer-cert-file",
        "--key-file" => "--peer-key-file",
        "--trusted-ca-file" => "--peer-trusted-ca-file",
        other => other,
    }
}

/// The name a dialler expects in the certificate of `addr` (`host:port`, `[v6]:port`): the
/// host, as an IP address or a DNS name.
pub fn server_name(addr: &str) -> Option<ServerName<'static>> {
    let host = match addr.rsplit_once(':') {
        Some((h, port)) if port.parse::<u16>().is_ok() => h,
        _ => addr,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_are_the_dialled_host() {
        assert_eq!(server_name("127.0.0.1:4201"), Some(ServerName::try_from("127.0.0.1").unwrap()));
        assert_eq!(server_name("node1:7000"), Some(ServerName::try_from("node1").unwrap()));
        assert_eq!(server_name("[::1]:7000"), Some(ServerName::try_from("::1").unwrap()));
    }

    #[test]
    fn missing_and_empty_files_are_one_line_errors() {
        let dir = std::env::temp_dir().join(format!("rl-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let files = ServerFiles { cert: empty.clone(), key: empty.clone(), ..Default::default() };
        let e = server_config(&files, &[]).unwrap_err().to_string();
        assert!(e.starts_with("--cert-file") && e.contains("no certificate") && !e.contains('\n'), "{e}");
        let files = ServerFiles { cert: dir.join("missing.pem"), key: empty, ..Default::default() };
        let e = server_config(&files, &[]).unwrap_err().to_string();
        assert!(e.starts_with("--cert-file") && e.contains("missing.pem"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
