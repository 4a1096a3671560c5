//! `ringleader member`: list, add and remove the members of a running coordination service.

use anyhow::Context as _;
use clap::{Args, Subcommand};
use ringleader_client::Members;

use crate::service_client::EndpointArgs;

/// List, add or remove the members (Raft voters) of a running coordination service
///
/// A change is a Raft configuration change, one at a time; the command returns once it is
/// applied and prints the members after it, one `ID PEER` line each (`ID PEER learner` for a
/// learner not promoted yet).
///
/// To add a node: start it first with `ringleader serve --id ID --listen PEER --join` and a
/// --peer flag for every current member (as `member list` prints them), then `member add ID
/// PEER`. It is added as a learner (it receives the log, does not vote), catches up from a
/// snapshot the leader sends, and is promoted to a voter once it is connected and the started
/// members stay a majority; one that is not ready in time stays a learner (status 1, "not
/// ready to be promoted"; add it again once it runs, or remove it). A removed node stops
/// serving (its /status says `"removed": true`); its data directory cannot serve again.
///
/// Examples:
///   ringleader member list --endpoints http://127.0.0.1:4101
///   ringleader serve --id 4 --listen 127.0.0.1:4204 --api 127.0.0.1:4104 --join \
///       --peer 1=127.0.0.1:4201 --peer 2=127.0.0.1:4202 --peer 3=127.0.0.1:4203 \
///       --data-dir node-4 --secret-file cluster.secret &
///   ringleader member add 4 127.0.0.1:4204 --endpoints http://127.0.0.1:4101
///   ringleader member remove 1 --endpoints http://127.0.0.1:4102,http://127.0.0.1:4103
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct MemberArgs {
    #[command(subcommand)]
    pub action: MemberAction,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// What to do with the members.
#[derive(Subcommand, Debug)]
pub enum MemberAction {
    /// Print the members, one `ID PEER` line each (as the answering node has applied them).
    List,
    /// Add node ID, whose peers reach it at PEER (its `serve --listen` address).
    Add {
        /// The new node's id, 1..=255.
        #[arg(value_name = "ID", value_parser = clap::value_parser!(u64).range(1..=255))]
        id: u64,
        /// Its peer address, HOST:PORT.
        #[arg(value_name = "PEER")]
        peer: String,
    },
    /// Remove node ID (the leader too: the others elect a new one).
    Remove {
        /// The node's id.
        #[arg(value_name = "ID", value_parser = clap::value_parser!(u64).range(1..=255))]
        id: u64,
    },
}

fn print(m: &Members) {
    for member in &m.members {
        println!("{} {}", member.id, member.peer);
    }
    for learner in &m.learners {
        println!("{} {} learner", learner.id, learner.peer);
    }
}

/// Runs `ringleader member`.
pub fn run(args: MemberArgs) -> crate::CommandResult {
    let client = args.endpoints.client()?;
    match args.action {
        MemberAction::List => print(&client.members().context("cannot list the members")?),
        MemberAction::Add { id, peer } => {
            print(&client.add_member(id, &peer).with_context(|| format!("cannot add node {id} at {peer}"))?)
        }
        MemberAction::Remove { id } => {
            print(&client.remove_member(id).with_context(|| format!("cannot remove node {id}"))?)
        }
    }
    Ok(crate::ExitStatus::Ok)
}
