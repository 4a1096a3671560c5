//! `ringleader elect`: campaign in an election of the coordination service, or observe it.

use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use ringleader_client::{Leader, Session};

use crate::service_client::{self, EndpointArgs, HoldEnd};

/// Campaign in an election of the coordination service, or observe its leaders
///
/// Grants a lease, campaigns with VALUE and waits to lead (the earliest live candidate leads).
/// When leader, prints `elected NAME value=V lease=L`, then holds leadership until Ctrl-C, or
/// runs COMMAND (with RINGLEADER_ELECTION, RINGLEADER_LEASE, RINGLEADER_LEASE_KEY and RINGLEADER_VALUE in its
/// environment) and resigns when it ends, exiting with its status. If the session is lost
/// while leading, COMMAND is sent SIGTERM and the exit status is 1.
///
/// With --observe, prints one line per leader change, starting with the current leader:
/// `leader NAME value=V lease=L` or `no leader NAME`, until Ctrl-C.
///
/// Examples:
///   ringleader elect scheduler --value node-a -- ./run-scheduler
///   ringleader elect scheduler --value node-b      (lead until Ctrl-C)
///   ringleader elect scheduler --observe
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct ElectArgs {
    /// The election's name.
    #[arg(value_name = "NAME", value_parser = service_client::parse_name)]
    pub name: String,
    /// The value to lead with [default: HOSTNAME:PID].
    #[arg(long, value_name = "V", conflicts_with = "observe")]
    pub value: Option<String>,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// The session's lease TTL, 10ms..3600s: how long leadership outlives this process if it dies.
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = service_client::parse_ttl, conflicts_with = "observe")]
    pub ttl: Duration,
    /// Give up campaigning after this long, 1ms..86400s [default: wait while the session lives].
    #[arg(long, value_name = "TIME", value_parser = service_client::parse_wait, conflicts_with = "observe")]
    pub timeout: Option<Duration>,
    /// Print the leader and every change instead of campaigning.
    #[arg(long)]
    pub observe: bool,
    /// The command to run while leader, after `--`.
    #[arg(last = true, value_name = "COMMAND", conflicts_with = "observe")]
    pub command: Vec<String>,
}

/// Runs `ringleader elect`.
pub fn run(args: ElectArgs) -> crate::CommandResult {
    let client = args.endpoints.client()?;
    if args.observe {
        return observe(&client, &args.name);
    }
    let value = args.value.clone().unwrap_or_else(default_value);
    let session = Session::new(&client, args.ttl).context("cannot start a session (grant a lease)")?;
    let leadership = session
        .campaign(&args.name, &value, args.timeout)
        .with_context(|| format!("not elected in {:?}", args.name))?;
    // From here on Ctrl-C ends the hold cleanly (release, revoke); while waiting it just
    // ends the process, and the service drops the wait when the lease expires.
    service_client::catch_signals()?;
    let lease = session.lease();
    println!("elected {} value={value} lease={lease}", args.name);
    let env = [
        ("RINGLEADER_ELECTION", args.name.clone()),
        ("RINGLEADER_LEASE", lease.to_string()),
        ("RINGLEADER_LEASE_KEY", session.client().lease_key(lease).unwrap_or_default()),
        ("RINGLEADER_VALUE", value.clone()),
    ];
    let end = service_client::run_while(&session, None, &args.command, &env);
    drop(leadership);
    drop(session);
    match end? {
        HoldEnd::Command(code) => service_client::exit_with(code),
        HoldEnd::Signalled => Ok(crate::ExitStatus::Ok),
        HoldEnd::Lost(why) => {
            let what = if args.command.is_empty() { "" } else { "; the command was sent SIGTERM" };
            bail!("lost leadership of {:?} (lease {lease}): {why}{what}", args.name)
        }
    }
}

/// How long `--observe` waits before reopening a stream that ended.
const RECONNECT_PAUSE: Duration = Duration::from_millis(500);

/// Prints every leader change; reopens the stream (on any endpoint) when it ends.
fn observe(client: &ringleader_client::Client, name: &str) -> crate::CommandResult {
    let mut last: Option<Option<Leader>> = None;
    let mut empty_streams = 0;
    loop {
        let stream = client.observe(name).with_context(|| format!("cannot observe {name:?}"))?;
        let mut got_any = false;
        for leader in stream {
            let leader = leader.with_context(|| format!("observing {name:?}"))?;
            got_any = true;
            if last.as_ref() != Some(&leader) {
                match &leader {
                    Some(l) => println!("leader {name} value={} lease={}", l.value, l.lease),
                    None => println!("no leader {name}"),
                }
                last = Some(leader);
            }
        }
        empty_streams = if got_any { 0 } else { empty_streams + 1 };
        if empty_streams >= 3 {
            bail!("the service ended the stream of {name:?} three times without an event");
        }
        // The stream ended (the node stopped, or closed it): ask again, not in a tight loop.
        std::thread::sleep(RECONNECT_PAUSE);
    }
}

/// `HOSTNAME:PID`.
fn default_value() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let host = if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "host".to_string()
    };
    format!("{host}:{}", std::process::id())
}
