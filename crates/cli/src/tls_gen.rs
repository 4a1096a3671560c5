//! `cluster --service --tls`: a throwaway CA and the certificates of a local cluster, made
//! with rcgen (ECDSA P-256, ring). The CA's key is never written: nothing can be signed with it
//! once the launcher has made the files.
//!
//! `DIR/ca.pem` (the CA), `DIR/node-I.pem` and `DIR/node-I-key.pem` (node I's certificate for
//! its APIs and its peer links: it names the host, `127.0.0.1`, `::1` and `localhost`, for
//! server and client authentication), `DIR/client.pem` and `DIR/client-key.pem` (a client
//! certificate, common name `root`). Keys are mode 0600, the directory 0700.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// The files of a generated cluster's TLS.
pub struct ClusterTls {
    /// The directory they are in.
    pub dir: PathBuf,
}

impl ClusterTls {
    /// The CA certificate.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
    /// Node `id`'s certificate.
    pub fn node_cert(&self, id: u64) -> PathBuf {
        self.dir.join(format!("node-{id}.pem"))
    }
    /// Node `id`'s key.
    pub fn node_key(&self, id: u64) -> PathBuf {
        self.dir.join(format!("node-{id}-key.pem"))
    }
    /// The client certificate.
    pub fn client_cert(&self) -> PathBuf {
        self.dir.join("client.pem")
    }
    /// The client key.
    pub fn client_key(&self) -> PathBuf {
        self.dir.join("client-key.pem")
    }
    /// The flags a client of the cluster gives (`ringleader lock`, etcdctl alike).
    pub fn client_flags(&self) -> String {
        format!(
            "--cacert {} --cert {} --key {}",
            self.ca().display(),
            self.client_cert().display(),
            self.client_key().display()
        )
    }
}

/// Writes `text` to `path` with `mode`, replacing any file there.
fn write(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Makes a new CA and certificates for nodes `1..=nodes` on `host` and one client, in `dir`.
pub fn generate(dir: &Path, nodes: u64, host: &str) -> anyhow::Result<ClusterTls> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let err = |e: rcgen::Error| anyhow::anyhow!("generating the cluster's certificates: {e}");
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "ringleader cluster CA (throwaway)");
    ca.key_usages =
        vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca, ca_key);
    let tls = ClusterTls { dir: dir.to_path_buf() };
    write(&tls.ca(), &ca_cert.pem(), 0o644)?;
    let mut names: Vec<String> = vec![host.to_string(), "127.0.0.1".into(), "::1".into(), "localhost".into()];
    names.dedup();
    for id in 1..=nodes {
        let key = KeyPair::generate().map_err(err)?;
        let mut p = CertificateParams::new(names.clone()).map_err(err)?;
        p.distinguished_name.push(DnType::CommonName, format!("ringleader node {id}"));
        p.extended_key_usages =
            vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        let cert = p.signed_by(&key, &issuer).map_err(err)?;
        write(&tls.node_cert(id), &cert.pem(), 0o644)?;
        write(&tls.node_key(id), &key.serialize_pem(), 0o600)?;
    }
    let key = KeyPair::generate().map_err(err)?;
    let mut p = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    p.distinguished_name.push(DnType::CommonName, "root");
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = p.signed_by(&key, &issuer).map_err(err)?;
    write(&tls.client_cert(), &cert.pem(), 0o644)?;
    write(&tls.client_key(), &key.serialize_pem(), 0o600)?;
    Ok(tls)
}
