//! The learner's processes: one per node, each in its own working directory, its stdout read by
//! a thread that forwards every line, tagged with the node and its incarnation, to one channel.
//!
//! Threads live here and only here: they read pipes. Everything the bench decides (order,
//! time, faults) happens on the caller's thread, from the channel, in the order lines arrive.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};

use crate::LabError;

/// What a reader thread reports.
#[derive(Debug)]
pub enum Output {
    /// Node `node` (position) in incarnation `incarnation` wrote `line`.
    Line {
        /// Position.
        node: usize,
        /// Which start of the process (0 first, +1 per recovery).
        incarnation: u32,
        /// The line, without its newline.
        line: String,
    },
    /// The process closed its stdout (it exited or was killed).
    Closed {
        /// Position.
        node: usize,
        /// Which start of the process.
        incarnation: u32,
    },
}

struct Running {
    child: Child,
    stdin: ChildStdin,
}

/// The processes of a run.
pub struct Nodes {
    command: String,
    dirs: Vec<PathBuf>,
    logs: Vec<PathBuf>,
    running: Vec<Option<Running>>,
    incarnation: Vec<u32>,
    started: Vec<bool>,
    tx: Sender<Output>,
    _scratch: Option<tempfile::TempDir>,
}

/// Rewrites the words of `command` that name an existing file or directory relative to the
/// current directory as absolute paths: the command runs in the node's own directory.
fn absolutize(command: &str) -> String {
    let cwd = std::env::current_dir().ok();
    command
        .split(' ')
        .map(|w| match &cwd {
            Some(cwd)
                if !w.is_empty() && !w.starts_with('-') && !w.starts_with('/') && cwd.join(w).exists() =>
            {
                cwd.join(w).display().to_string()
            }
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Nodes {
    /// Prepares `n` working directories under `dir` (or a temporary directory removed when
    /// the run ends) for `command`; starts nothing yet.
    pub fn new(command: &str, n: usize, dir: Option<&Path>) -> Result<(Nodes, Receiver<Output>), LabError> {
        let io = |what: String| move |source| LabError::Io { what, source };
        let (root, scratch) = match dir {
            Some(d) => (d.to_path_buf(), None),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("ringleader-lab-")
                    .tempdir()
                    .map_err(io("creating the nodes' scratch directory".into()))?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let mut dirs = Vec::new();
        let mut logs = Vec::new();
        for i in 1..=n {
            let d = root.join(format!("n{i}"));
            std::fs::create_dir_all(&d).map_err(io(format!("creating {}", d.display())))?;
            dirs.push(d);
            logs.push(root.join(format!("n{i}.stderr")));
        }
        let (tx, rx) = channel();
        let nodes = Nodes {
            command: absolutize(command),
            dirs,
            logs,
            running: (0..n).map(|_| None).collect(),
            incarnation: vec![0; n],
            started: vec![false; n],
            tx,
            _scratch: scratch,
        };
        Ok((nodes, rx))
    }

    /// The incarnation of `node` now running (or last run).
    pub fn incarnation(&self, node: usize) -> u32 {
        self.incarnation[node]
    }

    /// Starts `node`'s process (a new incarnation when it ran before).
    pub fn start(&mut self, node: usize) -> Result<(), LabError> {
        if self.running[node].is_some() {
            self.kill(node);
        }
        if self.started[node] {
            self.incarnation[node] += 1;
        }
        self.started[node] = true;
        let name = format!("n{}", node + 1);
        let spawn_err =
            |source| LabError::Spawn { node: name.clone(), command: self.command.clone(), source };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.logs[node])
            .map_err(spawn_err)?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {}", self.command))
            .current_dir(&self.dirs[node])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|source| LabError::Spawn {
                node: name.clone(),
                command: self.command.clone(),
                source,
            })?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let tx = self.tx.clone();
        let incarnation = self.incarnation[node];
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(Output::Line { node, incarnation, line }).is_err() {
                    return;
                }
            }
            let _ = tx.send(Output::Closed { node, incarnation });
        });
        self.running[node] = Some(Running { child, stdin });
        Ok(())
    }

    /// Writes `line` to `node`'s stdin; false when the process is gone (its stdout's end is
    /// reported through the channel).
    pub fn send(&mut self, node: usize, line: &str) -> bool {
        let Some(r) = self.running[node].as_mut() else { return false };
        r.stdin
            .write_all(line.as_bytes())
            .and_then(|_| r.stdin.write_all(b"\n"))
            .and_then(|_| r.stdin.flush())
            .is_ok()
    }

    /// Kills `node`'s process (SIGKILL: a crash, not a shutdown) and reaps it.
    pub fn kill(&mut self, node: usize) {
        if let Some(mut r) = self.running[node].take() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }

    /// Forgets a process that ended on its own, returning how it ended.
    pub fn reap(&mut self, node: usize) -> Option<String> {
        let mut r = self.running[node].take()?;
        Some(match r.child.wait() {
            Ok(status) => status.to_string(),
            Err(e) => e.to_string(),
        })
    }

    /// The last non-empty line `node` wrote on stderr, if any.
    pub fn last_stderr(&self, node: usize) -> Option<String> {
        let text = std::fs::read_to_string(&self.logs[node]).ok()?;
        text.lines().rev().find(|l| !l.trim().is_empty()).map(crate::protocol::shorten)
    }

    /// The working directory of `node`.
    pub fn dir(&self, node: usize) -> &Path {
        &self.dirs[node]
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for node in 0..self.running.len() {
            self.kill(node);
        }
    }
}
