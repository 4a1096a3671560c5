//! What the service verbs (`lock`, `elect`, `lease`) share: endpoints, durations, signals,
//! and running a command while a lease-backed hold lasts.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use ringleader_client::{Client, Session};

/// The endpoints when neither `--endpoints` nor `RINGLEADER_ENDPOINTS` gives them.
pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:4100";

/// `--endpoints`, shared by every service verb.
#[derive(Args, Debug, Clone, Default)]
pub struct EndpointArgs {
    /// Service nodes to ask, comma-separated (a node that cannot be reached or answers 503 is
    /// skipped) [default: $RINGLEADER_ENDPOINTS, else http://127.0.0.1:4100].
    #[arg(long, value_name = "URL[,URL...]", value_delimiter = ',', global = true)]
    pub endpoints: Vec<String>,
    /// Send `Authorization: Bearer TOKEN` with the token in this file (nodes started with
    /// `--api-token-file`) [default: $RINGLEADER_API_TOKEN_FILE, else none].
    #[arg(long, value_name = "FILE", global = true)]
    pub api_token_file: Option<std::path::PathBuf>,
    /// Act as this user of the service's auth store (etcd's users and roles): NAME:PASSWORD,
    /// or NAME with --password-file. The first endpoint that answers hands out a token, sent
    /// as the bearer to every endpoint. Not with --api-token-file.
    #[arg(long, value_name = "NAME[:PASSWORD]", global = true, conflicts_with = "api_token_file")]
    pub user: Option<String>,
    /// The password of --user, in this file (surrounding white space ignored).
    #[arg(long, value_name = "FILE", global = true, requires = "user")]
    pub password_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// `--cacert`, `--cert`, `--key`: how a client verifies `https://` endpoints and the
/// certificate it presents (etcdctl's flags).
#[derive(Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// Verify https:// endpoints with this CA certificate (PEM), and only with it; without it
    /// an https:// endpoint is refused. `ringleader cluster --service --tls` writes one as
    /// DATA_DIR/tls/ca.pem.
    #[arg(long, value_name = "FILE", global = true)]
    pub cacert: Option<std::path::PathBuf>,
    /// Present this client certificate (PEM) to the nodes (nodes started with
    /// --client-cert-auth). Needs --key and --cacert.
    #[arg(long, value_name = "FILE", global = true)]
    pub cert: Option<std::path::PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, value_name = "FILE", global = true)]
    pub key: Option<std::path::PathBuf>,
}

impl TlsArgs {
    /// The client TLS these flags ask for (`None`: no `--cacert`).
    pub fn client_tls(&self) -> anyhow::Result<Option<ringleader_client::ClientTls>> {
        let identity = match (&self.cert, &self.key) {
            (None, None) => None,
            (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
            (Some(_), None) => anyhow::bail!("--cert needs --key (the certificate's private key)"),
            (None, Some(_)) => anyhow::bail!("--key needs --cert (the certificate it is the key of)"),
        };
        match &self.cacert {
            None if identity.is_some() => {
                anyhow::bail!("--cert/--key need --cacert (the CA the server is verified with)")
            }
            None => Ok(None),
            Some(ca) => Ok(Some(ringleader_client::ClientTls::from_files(ca, identity)?)),
        }
    }

    /// A ureq TLS configuration for these flags: the CA's, or one that trusts no server.
    pub fn ureq_config(&self) -> anyhow::Result<ureq::tls::TlsConfig> {
        Ok(match self.client_tls()? {
            Some(t) => t.ureq_config(),
            None => ringleader_client::ClientTls::trust_nothing(),
        })
    }

    /// Checks that each of `endpoints` suits these flags (https with --cacert, http without).
    pub fn check(&self, endpoints: &[String]) -> anyhow::Result<()> {
        for e in endpoints {
            ringleader_client::check_scheme(e.trim(), self.cacert.is_some())?;
        }
        Ok(())
    }
}

impl EndpointArgs {
    /// A client of the endpoints given, or of `RINGLEADER_ENDPOINTS`, or of the default.
    pub fn client(&self) -> anyhow::Result<Client> {
        let (list, from) = if !self.endpoints.is_empty() {
            (self.endpoints.clone(), "--endpoints")
        } else if let Ok(env) = std::env::var("RINGLEADER_ENDPOINTS")
            && !env.trim().is_empty()
        {
            (env.split(',').map(str::to_string).collect(), "RINGLEADER_ENDPOINTS")
        } else {
            (vec![DEFAULT_ENDPOINT.to_string()], "the default endpoint")
        };
        let mut client = Client::new(list).context(from)?;
        if let Some(tls) = self.tls.client_tls()? {
            client = client.with_tls(tls);
        }
        self.tls.check(client.endpoints())?;
        let file = self.api_token_file.clone().or_else(|| {
            std::env::var_os("RINGLEADER_API_TOKEN_FILE").filter(|v| !v.is_empty()).map(Into::into)
        });
        if let Some(user) = &self.user {
            let (name, password) = self.credentials(user)?;
            let token = authenticate(client.endpoints(), &self.tls, &name, &password)?;
            return Ok(client.with_bearer_token(&token));
        }
        match file {
            Some(path) => Ok(client.with_bearer_token(&read_token(&path)?)),
            None => Ok(client),
        }
    }

    /// The name and password `--user` (and `--password-file`) give.
    fn credentials(&self, user: &str) -> anyhow::Result<(String, String)> {
        let (name, inline) = match user.split_once(':') {
            Some((n, p)) => (n, Some(p.to_string())),
            None => (user, None),
        };
        if name.is_empty() {
            anyhow::bail!(
                "--user {user:?}: the name is empty; give NAME:PASSWORD or NAME with --password-file"
            );
        }
        let password = match (inline, &self.password_file) {
            (Some(_), Some(_)) => {
                anyhow::bail!("--user NAME:PASSWORD and --password-file: give the password once")
            }
            (Some(p), None) => p,
            (None, Some(path)) => std::fs::read_to_string(path)
                .with_context(|| format!("--password-file {}: cannot read it", path.display()))?
                .trim()
                .to_string(),
            (None, None) => {
                anyhow::bail!("--user {name}: no password; give NAME:PASSWORD or --password-file FILE")
            }
        };
        Ok((name.to_string(), password))
    }
}

/// A token for `name` and `password` from the first of `endpoints` that answers
/// (`POST /v1/auth/authenticate`); a refusal of the password is final.
fn authenticate(endpoints: &[String], tls: &TlsArgs, name: &str, password: &str) -> anyhow::Result<String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .tls_config(tls.ureq_config()?)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let body = serde_json::json!({ "name": name, "password": password }).to_string();
    let mut last = String::from("no endpoint");
    for e in endpoints {
        let url = format!("{}/v1/auth/authenticate", e.trim().trim_end_matches('/'));
        let sent = agent.post(&url).header("content-type", "application/json").send(body.as_str());
        let mut response = match sent {
            Ok(r) => r,
            Err(err) => {
                last = format!("{e}: {err}");
                continue;
            }
        };
        let status = response.status().as_u16();
        let answer: serde_json::Value =
            serde_json::from_str(&response.body_mut().read_to_string().unwrap_or_default())
                .unwrap_or_default();
        match (status, answer["token"].as_str()) {
            (200, Some(token)) => return Ok(token.to_string()),
            (401 | 409, _) => {
                let why = answer["error"].as_str().unwrap_or("refused");
                anyhow::bail!("--user {name}: {e} refused the name and password: {why}")
            }
            _ => last = format!("{e}: status {status}"),
        }
    }
    anyhow::bail!("--user {name}: no endpoint handed out a token (last: {last})")
}

/// Reads a bearer token file: its content, surrounding white space ignored, not empty.
pub fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--api-token-file {}: cannot read it", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        anyhow::bail!(
            "--api-token-file {}: the file is empty; put the nodes' API token in it",
            path.display()
        );
    }
    Ok(token.to_string())
}

/// Parses a lock or election name: not empty, and no `/`, `?`, `#`, `%`, space or control
/// character (a name is one URL path segment).
pub fn parse_name(text: &str) -> Result<String, String> {
    if text.is_empty() || text.chars().any(|c| matches!(c, '/' | '?' | '#' | '%' | ' ') || c.is_control()) {
        return Err(
            "a name must be non-empty, without '/', '?', '#', '%', spaces or control characters".into()
        );
    }
    Ok(text.to_string())
}

/// Parses a TTL: a duration with a unit (`ns`, `us`, `ms`, `s`; a bare number is milliseconds),
/// 10ms to 1h, in whole milliseconds.
pub fn parse_ttl(text: &str) -> Result<Duration, String> {
    parse_bounded(text, Duration::from_millis(10), Duration::from_secs(3600))
}

/// Parses a wait: 1ms to 24h.
pub fn parse_wait(text: &str) -> Result<Duration, String> {
    parse_bounded(text, Duration::from_millis(1), Duration::from_secs(24 * 3600))
}

fn parse_bounded(text: &str, min: Duration, max: Duration) -> Result<Duration, String> {
    let ns = ringleader_algorithms::params::parse_duration(text)
        .ok_or_else(|| "not a duration: use e.g. 500ms or 10s (a bare number is milliseconds)".to_string())?;
    let d = Duration::from_nanos(ns);
    if d < min || d > max {
        return Err(format!("must be at least {min:?} and at most {max:?}"));
    }
    Ok(d)
}

/// A SIGINT or SIGTERM arrived.
static SIGNALLED: AtomicBool = AtomicBool::new(false);
/// The last signal that another process sent us (not the terminal), to forward to the child.
static TO_FORWARD: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    SIGNALLED.store(true, Ordering::SeqCst);
    // A signal from the terminal (Ctrl-C) has no sender process: the child, in the same
    // process group, received it too. One sent with kill(2) names its sender: forward it.
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let from_process = !info.is_null() && unsafe { (*info).si_pid() } != 0;
    if from_process {
        TO_FORWARD.store(sig, Ordering::SeqCst);
    }
}

/// Catches SIGINT and SIGTERM from now on (see [`signalled`] and the forwarding in
/// [`run_while`]).
pub fn catch_signals() -> anyhow::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only stores to atomics.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            anyhow::bail!("cannot catch signal {sig}: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived since [`catch_signals`].
pub fn signalled() -> bool {
    SIGNALLED.load(Ordering::SeqCst)
}

/// How a hold ended.
pub enum HoldEnd {
    /// The command ended with this exit status (128 + N when killed by signal N).
    Command(u8),
    /// Ctrl-C or SIGTERM (no command).
    Signalled,
    /// The session or the lock was lost (the command, if any, was sent SIGTERM, then SIGKILL
    /// after [`GRACE`], and has ended).
    Lost(String),
}

/// How often the hold checks on the command and signals.
const POLL: Duration = Duration::from_millis(50);

/// How long a command sent SIGTERM (its hold was lost) has to end before it is sent SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);

/// A check of what is held beyond the session (a lock): `Some(why)` once it is lost, and how
/// often to ask.
pub struct Watch<'a> {
    /// Asks the service; `Some(why)` when the hold is lost.
    pub lost: &'a dyn Fn() -> Option<String>,
    /// How often.
    pub every: Duration,
}

/// Runs `command` (if any) with `env` while `session` lives and `watch` (if any) says the hold
/// is kept, forwarding SIGINT/SIGTERM sent to this process; without a command, waits for
/// Ctrl-C. When the hold is lost, the command is sent SIGTERM, then SIGKILL after [`GRACE`].
/// [`catch_signals`] must have been called.
pub fn run_while(
    session: &Session,
    watch: Option<Watch<'_>>,
    command: &[String],
    env: &[(&str, String)],
) -> anyhow::Result<HoldEnd> {
    let mut next_check = watch.as_ref().map(|w| std::time::Instant::now() + w.every);
    let mut lost = || -> Option<String> {
        if let Some(end) = session.wait_lost(POLL) {
            return Some(end.to_string());
        }
        let (w, at) = (watch.as_ref()?, next_check?);
        if std::time::Instant::now() < at {
            return None;
        }
        next_check = Some(std::time::Instant::now() + w.every);
        (w.lost)()
    };
    let Some((program, args)) = command.split_first() else {
        loop {
            if signalled() {
                return Ok(HoldEnd::Signalled);
            }
            if let Some(why) = lost() {
                return Ok(HoldEnd::Lost(why));
            }
        }
    };
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .spawn()
        .with_context(|| format!("cannot run {program:?}"))?;
    let pid = child.id() as libc::pid_t;
    loop {
        if let Some(status) = child.try_wait().context("waiting for the command")? {
            return Ok(HoldEnd::Command(exit_code(status)));
        }
        let forward = TO_FORWARD.swap(0, Ordering::SeqCst);
        if forward != 0 {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(pid, forward) };
        }
        if let Some(why) = lost() {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            let deadline = std::time::Instant::now() + GRACE;
            loop {
                if child.try_wait().context("waiting for the command")?.is_some() {
                    break;
                }
                if std::time::Instant::now() >= deadline {
                    // SAFETY: as above; the child has not been reaped, so the pid is still ours.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(POLL);
            }
            return Ok(HoldEnd::Lost(why));
        }
    }
}

/// The exit status a shell would report for `status`.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        (None, None) => 1,
    }
}

/// Ends the process with `code` after flushing stdout (for a command's exit status, which
/// [`crate::ExitStatus`] does not carry).
pub fn exit_with(code: u8) -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    std::process::exit(i32::from(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_and_waits_have_ranges() {
        assert_eq!(parse_ttl("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_ttl("250"), Ok(Duration::from_millis(250)));
        assert!(parse_ttl("5ms").unwrap_err().contains("at least"));
        assert!(parse_ttl("2h").is_err());
        assert!(parse_ttl("soon").unwrap_err().contains("not a duration"));
        assert_eq!(parse_wait("1ms"), Ok(Duration::from_millis(1)));
        assert!(parse_wait("0").is_err());
    }
}
