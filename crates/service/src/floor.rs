//! The machine's floor under the service: what one durable append costs on a data directory's
//! file system, and what a loopback round trip costs.
//!
//! A replicated commit cannot be faster than its parts. On three nodes an uncontended lock
//! takes one commit: the leader appends the entry to its log (one fsync) while it sends it to
//! the followers, a follower appends it (one fsync) and answers, and the leader applies it — so
//! one commit costs at least one durable append plus one peer round trip. A lock+unlock is two
//! commits and two client round trips. `ringleader bench-service --measure floor` prints these
//! parts and that sum, so that every service figure can be read against the disk and the
//! network it ran on.
//!
//! Three samples, each taken `n` times in a row:
//! - [`fdatasync_append`]: 4 KiB appended to a file and `fdatasync`ed — the file system alone;
//! - [`raft_append`]: one small entry and the hard state persisted by [`DiskLog::persist`] —
//!   exactly what the server does once per `Ready`, through redb;
//! - [`loopback_round_trip`]: 64 bytes sent and echoed over TCP on 127.0.0.1 (no delay).

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use raft::eraftpb::{Entry, HardState};

use crate::disk::{DiskError, DiskLog, LogUpdate};

/// A scratch directory inside the measured one, removed when dropped: the floor is measured
/// where the data lives, and nothing of the data directory's own is touched.
struct Scratch(PathBuf);

impl Scratch {
    fn new(dir: &Path, what: &str) -> io::Result<Scratch> {
        let path = dir.join(format!(".ringleader-floor-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `n` times: 4 KiB appended to a file in `dir` and synced with `fdatasync`.
pub fn fdatasync_append(dir: &Path, n: usize) -> io::Result<Vec<Duration>> {
    let scratch = Scratch::new(dir, "fsync")?;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(scratch.0.join("append"))?;
    let block = [0x5au8; 4096];
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        samples.push(t.elapsed());
    }
    Ok(samples)
}

/// `n` times: one 64-byte entry and the hard state persisted by a fresh [`DiskLog`] in `dir`,
/// one write transaction and one fsync each, as the server persists a `Ready`.
pub fn raft_append(dir: &Path, n: usize) -> Result<Vec<Duration>, DiskError> {
    let scratch = Scratch::new(dir, "raft")
        .map_err(|source| DiskError::Directory { path: dir.to_path_buf(), source })?;
    let mut log = DiskLog::open(&scratch.0)?;
    let mut samples = Vec::with_capacity(n);
    for index in 1..=n as u64 {
        let entry = Entry { index, term: 1, data: vec![0x5a; 64].into(), ..Default::default() };
        let hard_state = HardState { term: 1, vote: 1, commit: index - 1, ..Default::default() };
        let update = LogUpdate { snapshot: None, entries: vec![entry], hard_state: Some(hard_state) };
        let t = Instant::now();
        log.persist(&update)?;
        samples.push(t.elapsed());
    }
    Ok(samples)
}

/// `n` times: 64 bytes written to a TCP connection on 127.0.0.1 and read back from an echo.
pub fn loopback_round_trip(n: usize) -> io::Result<Vec<Duration>> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let echo = std::thread::spawn(move || -> io::Result<()> {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut buf = [0u8; 64];
        loop {
            match s.read_exact(&mut buf) {
                Ok(()) => s.write_all(&buf)?,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    });
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    let mut buf = [0x5au8; 64];
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
        samples.push(t.elapsed());
    }
    drop(s);
    echo.join().map_err(|_| io::Error::other("the echo thread panicked"))??;
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_is_taken_and_the_scratch_directory_is_removed() {
        let dir = std::env::temp_dir().join(format!("ringleader-floor-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(fdatasync_append(&dir, 3).unwrap().len(), 3);
        assert_eq!(raft_append(&dir, 3).unwrap().len(), 3);
        assert_eq!(loopback_round_trip(3).unwrap().len(), 3);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "scratch directories left behind");
        std::fs::remove_dir(&dir).unwrap();
    }
}
