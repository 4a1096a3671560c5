//! Peers prove who they are: a keyed challenge–response over a cluster secret.
//!
//! Every node of a cluster holds the same secret (32 random bytes from the operating system,
//! kept hex-encoded in a file readable by its owner only). A peer connection is accepted only
//! after both ends have shown that they hold it, for this connection and these two ids:
//!
//! ```text
//!   dialler  ── Hello { …, sender: d, nonce: Nd } ───────────────────────────▶ acceptor a
//!            ◀── Challenge { nonce: Na, mac: HMAC(K, "acceptor" · Nd · Na · d · a · algo) } ──
//!   checks the acceptor's mac, then
//!            ── Proof { mac: HMAC(K, "dialler" · Nd · Na · d · a · algo) } ──────────▶
//!                                                 checks it (constant time), then delivers
//! ```
//!
//! HMAC-SHA-256 from RustCrypto's `hmac` and `sha2`; nonces from the operating system
//! (`getrandom`); tags compared in constant time (`Mac::verify_slice`). Fresh nonces on both
//! sides make a recorded exchange useless on another connection, and the ids in the transcript
//! bind the proof to the claimed sender: a connection can only speak as the id it proved. The
//! secret never crosses the network. Nothing here is encrypted: an on-path attacker can read
//! the messages (and, with no per-message MAC, inject into an established TCP stream); use a
//! private network or a tunnel when that matters.
//!
//! The cluster launcher's control channel uses the same secret ([`Secret::mac`] over a nonce the
//! launcher sends and the command line).

use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of a nonce and of a tag.
pub const NONCE_LEN: usize = 32;

/// A random nonce from the operating system.
pub fn nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    getrandom::fill(&mut n).expect("the operating system provides random bytes");
    n
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a hex string (`None` unless every pair is hex).
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

/// How an open credential file is exposed to other users.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposed {
    /// Another user owns it (and could have chosen its content, or read it).
    Owner {
        /// The file's owner.
        owner: u32,
        /// This process's effective uid.
        me: u32,
    },
    /// Others (group or world) may read or write it.
    Permissions {
        /// Its mode bits.
        mode: u32,
    },
}

/// Whether the open credential file `file` is this user's alone: owned by the effective uid,
/// no group or other permission bits. The check is made on the file opened, not on its name.
pub fn private(file: &std::fs::File) -> std::io::Result<Result<(), Exposed>> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Ok(Err(Exposed::Owner { owner: meta.uid(), me }));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Ok(Err(Exposed::Permissions { mode }));
    }
    Ok(Ok(()))
}

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The file could not be read.
    #[error("secret file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file's contents are not a secret.
    #[error("secret file {path}: expected at least 32 bytes as hex (as `ringleader cluster` writes it)")]
    Format {
        /// The file.
        path: String,
    },
    /// Another user owns the file (and could have chosen the secret, or read it).
    #[error(
        "secret file {path}: owned by uid {owner}, not by this user (uid {me}); use a secret file of your own"
    )]
    Owner {
        /// The file.
        path: String,
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        me: u32,
    },
    /// Others may read the file.
    #[error("secret file {path}: readable by others (mode {mode:o}); chmod 600 it")]
    Permissions {
        /// The file.
        path: String,
        /// Its mode bits.
        mode: u32,
    },
}

/// The cluster secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    /// 32 fresh random bytes.
    pub fn generate() -> Secret {
        Secret(nonce().to_vec())
    }

    /// A secret from its hex form (at least 32 bytes).
    pub fn from_hex(text: &str) -> Option<Secret> {
        unhex(text.trim()).filter(|b| b.len() >= NONCE_LEN).map(Secret)
    }

    /// The hex form.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Reads a secret file, refusing one that another user owns or that others may read (the
    /// checks are made on the file opened, not on its name).
    pub fn read_file(path: &Path) -> Result<Secret, SecretError> {
        use std::io::Read;
        let shown = path.display().to_string();
        let io = |source| SecretError::Io { path: shown.clone(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        match private(&file).map_err(io)? {
            Ok(()) => {}
            Err(Exposed::Owner { owner, me }) => return Err(SecretError::Owner { path: shown, owner, me }),
            Err(Exposed::Permissions { mode }) => return Err(SecretError::Permissions { path: shown, mode }),
        }
        // A secret is 64 hex digits; a file far larger is not one (and is not read whole).
        let mut text = String::new();
        file.take(4097).read_to_string(&mut text).map_err(io)?;
        Secret::from_hex(&text).filter(|_| text.len() <= 4096).ok_or(SecretError::Format { path: shown })
    }

    /// Writes the secret to a new file with mode 0600 (replacing an older file).
    pub fn write_file(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::remove_file(path);
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
        f.write_all(format!("{}\n", self.to_hex()).as_bytes())?;
        f.sync_all()
    }

    fn keyed(&self, label: &[u8], parts: &[&[u8]]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(&(label.len() as u64).to_be_bytes());
        mac.update(label);
        for p in parts {
            // Length-prefixed, so that no two transcripts concatenate to the same bytes.
            mac.update(&(p.len() as u64).to_be_bytes());
            mac.update(p);
        }
        mac
    }

    /// HMAC-SHA-256 of the labelled transcript `parts`.
    pub fn mac(&self, label: &[u8], parts: &[&[u8]]) -> [u8; 32] {
        self.keyed(label, parts).finalize().into_bytes().into()
    }

    /// True when `tag` is the HMAC of the transcript (compared in constant time).
    pub fn verify(&self, label: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
        self.keyed(label, parts).verify_slice(tag).is_ok()
    }
}

/// The transcript both ends of a peer connection sign.
pub fn transcript<'a>(
    dialler_nonce: &'a [u8; NONCE_LEN],
    acceptor_nonce: &'a [u8; NONCE_LEN],
    ids: &'a [u8; 16],
    algorithm: &'a str,
) -> [&'a [u8]; 4] {
    [dialler_nonce, acceptor_nonce, ids, algorithm.as_bytes()]
}

/// The dialler's and the acceptor's ids as transcript bytes.
pub fn ids(dialler: u64, acceptor: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&dialler.to_be_bytes());
    b[8..].copy_from_slice(&acceptor.to_be_bytes());
    b
}

/// The label of the acceptor's tag.
pub const ACCEPTOR: &[u8] = b"ringleader peer acceptor v2";
/// The label of the dialler's tag.
pub const DIALLER: &[u8] = b"ringleader peer dialler v2";
/// The label of a control-channel command's tag.
pub const CONTROL: &[u8] = b"ringleader cluster control v1";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_bind_key_label_and_every_part() {
        let k = Secret::generate();
        let other = Secret::generate();
        let (nd, na) = (nonce(), nonce());
        let id = ids(3, 5);
        let t = transcript(&nd, &na, &id, "bully");
        let tag = k.mac(DIALLER, &t);
        assert!(k.verify(DIALLER, &t, &tag));
        assert!(!other.verify(DIALLER, &t, &tag), "another key");
        assert!(!k.verify(ACCEPTOR, &t, &tag), "the other role");
        let forged = ids(4, 5);
        assert!(!k.verify(DIALLER, &transcript(&nd, &na, &forged, "bully"), &tag), "another id");
        assert!(!k.verify(DIALLER, &transcript(&nd, &nonce(), &id, "bully"), &tag), "another nonce");
        assert!(!k.verify(DIALLER, &t, &tag[..31]), "a truncated tag");
    }

    #[test]
    fn secrets_round_trip_through_hex_and_a_private_file() {
        use std::os::unix::fs::PermissionsExt;
        let k = Secret::generate();
        assert_eq!(Secret::from_hex(&k.to_hex()), Some(k.clone()));
        assert_eq!(Secret::from_hex("abcd"), None, "too short");
        assert_eq!(Secret::from_hex(&"zz".repeat(32)), None);
        let path = std::env::temp_dir().join(format!("ringleader-secret-test-{}", std::process::id()));
        k.write_file(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(Secret::read_file(&path).unwrap(), k);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Secret::read_file(&path).unwrap_err().to_string();
        assert!(err.contains("readable by others (mode 644)"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        // Another user's file: only root can make one here (chown); elsewhere the check is
        // shown by the launcher's tests with a second OS user.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            let err = Secret::read_file(&path).unwrap_err().to_string();
            assert!(err.contains("owned by uid 65534, not by this user (uid 0)"), "{err}");
        } else {
            println!("skipped the owner check: it needs root to give the file to another user");
        }
        let _ = std::fs::remove_file(&path);
    }
}
