//! Maelstrom's wire format, and the bench's few additions.
//!
//! Every line is one JSON object `{"src": S, "dest": D, "body": {"type": T, …}}`. Nodes are
//! `n1`..`nN`; the bench's clients are `c1`..`cN` (client `cK` talks to node `nK`) and `c0`
//! sends `init`. A request carries `msg_id`; its answer carries `in_reply_to`; a failure is
//! Maelstrom's error body `{"type":"error","code":C,"text":…}`.
//!
//! What a node may send to the destination `lab` (the bench itself; never routed, never
//! counted as a message):
//!
//! - `{"type":"lab_done"}`: the end-of-step marker. A node that writes it after handling each
//!   input line lets `--lockstep` move on at once and exactly; one that never writes it is
//!   waited for by a quiet period.
//! - `{"type":"lab_timer","after_ms":T,"tag":X}`: a timer on the bench's clock; after T ms the
//!   node receives `{"src":"lab","dest":"nK","body":{"type":"lab_timeout","tag":X}}`. In
//!   lockstep this is the only deterministic way to wait.
//! - `{"type":"leader","leader":L,"term":T}`: what the node now believes about the
//!   coordinator (`L` a uid or a node name, `null` for none), reported as soon as it changes, so
//!   that uniqueness is judged at every moment and not only at the end.

use ringleader_core::Uid;
use serde_json::{Value, json};

/// The bench's own name as a source and destination.
pub const LAB: &str = "lab";

/// The end-of-step marker's type.
pub const DONE: &str = "lab_done";

/// Maelstrom's error codes the bench uses.
pub mod code {
    /// The request cannot be served now; it may be retried.
    pub const TEMPORARILY_UNAVAILABLE: u64 = 11;
}

/// The name of node `uid`.
pub fn node_name(uid: Uid) -> String {
    format!("n{uid}")
}

/// The name of the client of node `uid`.
pub fn client_name(uid: Uid) -> String {
    format!("c{uid}")
}

/// The uid in a name `nK` (or a bare number), if it is one of `1..=n`.
pub fn parse_node(name: &str, n: u32) -> Option<Uid> {
    let digits = name.strip_prefix('n').unwrap_or(name);
    digits.parse::<Uid>().ok().filter(|&u| u >= 1 && u <= Uid::from(n))
}

/// A uid given as a number or a node name (`leader` answers accept both).
pub fn uid_of(v: &Value, n: u32) -> Option<Uid> {
    match v {
        Value::Number(x) => x.as_u64().filter(|&u| u >= 1 && u <= Uid::from(n)),
        Value::String(s) => parse_node(s, n),
        _ => None,
    }
}

/// One message a node wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    /// Who says it sent it.
    pub src: String,
    /// Where it goes.
    pub dest: String,
    /// The body (an object with a string `type`).
    pub body: Value,
}

impl Message {
    /// The body's type.
    pub fn kind(&self) -> &str {
        self.body.get("type").and_then(Value::as_str).unwrap_or("")
    }

    /// The body's `in_reply_to`, if a number.
    pub fn in_reply_to(&self) -> Option<u64> {
        self.body.get("in_reply_to").and_then(Value::as_u64)
    }

    /// The line to write.
    pub fn line(&self) -> String {
        json!({"src": self.src, "dest": self.dest, "body": self.body}).to_string()
    }
}

/// Reads one line a node wrote, or says what is wrong with it and what is allowed.
pub fn parse(line: &str) -> Result<Message, String> {
    let v: Value =
        serde_json::from_str(line).map_err(|e| format!("not JSON ({e}); write one JSON object per line"))?;
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let (Some(src), Some(dest)) = (field("src"), field("dest")) else {
        return Err("a message needs string fields \"src\" and \"dest\"".into());
    };
    let body = v.get("body").cloned().unwrap_or(Value::Null);
    if body.get("type").and_then(Value::as_str).is_none() {
        return Err("a message needs a \"body\" object with a string \"type\"".into());
    }
    Ok(Message { src, dest, body })
}

/// `line` cut to at most 200 characters, for error messages.
pub fn shorten(line: &str) -> String {
    let mut s: String = line.chars().take(200).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lines() {
        assert_eq!(parse_node("n3", 5), Some(3));
        assert_eq!(parse_node("n6", 5), None);
        assert_eq!(parse_node("c1", 5), None);
        assert_eq!(uid_of(&json!(2), 3), Some(2));
        assert_eq!(uid_of(&json!("n2"), 3), Some(2));
        assert_eq!(uid_of(&json!(0), 3), None);
        let m = parse(r#"{"src":"n1","dest":"n2","body":{"type":"request","msg_id":4,"ts":3}}"#).unwrap();
        assert_eq!((m.kind(), m.dest.as_str()), ("request", "n2"));
        assert!(parse("hello").unwrap_err().contains("not JSON"));
        assert!(parse(r#"{"src":"n1","body":{"type":"x"}}"#).unwrap_err().contains("dest"));
        assert!(parse(r#"{"src":"n1","dest":"n2","body":{}}"#).unwrap_err().contains("type"));
    }
}
