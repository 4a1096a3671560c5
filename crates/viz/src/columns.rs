//! A page's trace records, column by column.
//!
//! One JSON object per record repeats every field name and every message kind in every record:
//! about 150 bytes a record, 30 MB for a page of 200,000. The page embeds them as columns
//! instead, which the viewer turns back into the same objects ([`decode`] here, `decodeRecords`
//! in `assets/viewer.js`):
//!
//! - `step` and `time` as differences from the record before (small numbers);
//! - `kind` as an index into `kinds`, `node` as a number (-1 for none);
//! - `uid` left out when every record's uid is its node's (`uids[node]`), as the simulator and
//!   the model checker write them;
//! - every other field *sparse*: `at` (differences between the indices of the records that
//!   have it) and `v` (their values); texts and JSON values (`msg_kind`, `msg`, `timer`,
//!   `request`, `event`, `property`, `detail`) as indices into one dictionary `dict`, each
//!   distinct value written once.

use std::collections::HashMap;

use ringleader_core::Uid;
use ringleader_core::trace::{RecordKind, TraceRecord};
use serde::Serialize;
use serde_json::Value;

/// One optional field: the records that have it and their values.
#[derive(Debug, Default, Serialize)]
pub struct Sparse<T> {
    /// Index of each record that has the field, as the difference from the previous one's.
    at: Vec<u64>,
    /// The values.
    v: Vec<T>,
    #[serde(skip)]
    last: Option<usize>,
}

impl<T> Sparse<T> {
    fn push(&mut self, i: usize, value: T) {
        self.at.push((i - self.last.map_or(0, |l| l)) as u64);
        self.last = Some(i);
        self.v.push(value);
    }
}

/// The records of a page as columns (the format the module's documentation describes).
#[derive(Debug, Default, Serialize)]
pub struct Columns {
    n: usize,
    kinds: Vec<Value>,
    step: Vec<i64>,
    time: Vec<i64>,
    kind: Vec<u8>,
    node: Vec<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<Sparse<Uid>>,
    peer: Sparse<u64>,
    msg_id: Sparse<u64>,
    lamport: Sparse<u64>,
    vector: Sparse<Vec<u64>>,
    msg_kind: Sparse<u32>,
    msg: Sparse<u32>,
    timer: Sparse<u32>,
    request: Sparse<u32>,
    event: Sparse<u32>,
    property: Sparse<u32>,
    detail: Sparse<u32>,
    dict: Vec<Value>,
    #[serde(skip)]
    interned: HashMap<String, u32>,
}

impl Columns {
    fn intern(&mut self, v: Value) -> u32 {
        let key = v.to_string();
        if let Some(&i) = self.interned.get(&key) {
            return i;
        }
        let i = self.dict.len() as u32;
        self.dict.push(v);
        self.interned.insert(key, i);
        i
    }
}

/// Where one text field's column is.
type TextColumn = fn(&mut Columns) -> &mut Sparse<u32>;

/// The columns of `records`, whose nodes have `uids`.
pub fn encode(records: &[TraceRecord], uids: &[Uid]) -> Columns {
    let mut c = Columns { n: records.len(), ..Columns::default() };
    let mut kinds: HashMap<RecordKind, u8> = HashMap::new();
    let uid_follows_node =
        records.iter().all(|r| r.uid == r.node.and_then(|n| uids.get(n as usize).copied()));
    let mut uid = Sparse::default();
    let (mut step, mut time) = (0i64, 0i64);
    for (i, r) in records.iter().enumerate() {
        c.step.push(r.step as i64 - step);
        c.time.push(r.time_ns as i64 - time);
        (step, time) = (r.step as i64, r.time_ns as i64);
        let next = kinds.len() as u8;
        let k = *kinds.entry(r.kind).or_insert_with(|| {
            c.kinds.push(serde_json::to_value(r.kind).expect("a kind serializes"));
            next
        });
        c.kind.push(k);
        c.node.push(r.node.map_or(-1, i64::from));
        if let Some(u) = r.uid.filter(|_| !uid_follows_node) {
            uid.push(i, u);
        }
        if let Some(p) = r.peer {
            c.peer.push(i, u64::from(p));
        }
        if let Some(m) = r.msg_id {
            c.msg_id.push(i, m);
        }
        if let Some(l) = r.lamport {
            c.lamport.push(i, l);
        }
        if let Some(v) = &r.vector {
            c.vector.push(i, v.clone());
        }
        let texts: [(&Option<String>, TextColumn); 4] = [
            (&r.msg_kind, |c| &mut c.msg_kind),
            (&r.timer, |c| &mut c.timer),
            (&r.property, |c| &mut c.property),
            (&r.detail, |c| &mut c.detail),
        ];
        for (text, column) in texts {
            if let Some(t) = text {
                let at = c.intern(Value::String(t.clone()));
                column(&mut c).push(i, at);
            }
        }
        if let Some(m) = &r.msg {
            let at = c.intern(m.clone());
            c.msg.push(i, at);
        }
        if let Some(q) = &r.request {
            let at = c.intern(serde_json::to_value(q).expect("a request serializes"));
            c.request.push(i, at);
        }
        if let Some(e) = &r.event {
            let at = c.intern(serde_json::to_value(e).expect("an event serializes"));
            c.event.push(i, at);
        }
    }
    if !uid_follows_node {
        c.uid = Some(uid);
    }
    c
}

/// Reads embedded columns back into records, as the viewer does (`uids`: the page's).
pub fn decode(c: &Value, uids: &[Uid]) -> Result<Vec<TraceRecord>, String> {
    let n = c["n"].as_u64().ok_or("no n")? as usize;
    let ints = |name: &str| -> Result<Vec<i64>, String> {
        c[name]
            .as_array()
            .ok_or(format!("no {name}"))?
            .iter()
            .map(|v| v.as_i64().ok_or(format!("{name}: not a number")))
            .collect()
    };
    let (steps, times, kinds, nodes) = (ints("step")?, ints("time")?, ints("kind")?, ints("node")?);
    let mut out = Vec::with_capacity(n);
    let (mut step, mut time) = (0i64, 0i64);
    for i in 0..n {
        step += steps[i];
        time += times[i];
        let kind: RecordKind =
            serde_json::from_value(c["kinds"][kinds[i] as usize].clone()).map_err(|e| e.to_string())?;
        let mut r = TraceRecord::new(step as u64, time as u64, kind);
        if nodes[i] >= 0 {
            r.node = Some(nodes[i] as u32);
            if c.get("uid").is_none() {
                r.uid = uids.get(nodes[i] as usize).copied();
            }
        }
        out.push(r);
    }
    let sparse = |name: &str,
                  out: &mut Vec<TraceRecord>,
                  set: &mut dyn FnMut(&mut TraceRecord, &Value) -> Result<(), String>|
     -> Result<(), String> {
        let Some(col) = c.get(name) else { return Ok(()) };
        let (at, v) = (
            col["at"].as_array().ok_or(format!("{name}.at"))?,
            col["v"].as_array().ok_or(format!("{name}.v"))?,
        );
        let mut i = 0usize;
        for (d, value) in at.iter().zip(v) {
            i += d.as_u64().ok_or(format!("{name}.at: not a number"))? as usize;
            set(out.get_mut(i).ok_or(format!("{name}: record {i} of {n}"))?, value)?;
        }
        Ok(())
    };
    let num = |v: &Value| v.as_u64().ok_or_else(|| "not a number".to_string());
    let word = |v: &Value| -> Result<Value, String> { Ok(c["dict"][num(v)? as usize].clone()) };
    let text = |v: &Value| -> Result<String, String> {
        word(v)?.as_str().map(str::to_string).ok_or("not a text".into())
    };
    sparse("uid", &mut out, &mut |r, v| {
        r.uid = Some(num(v)?);
        Ok(())
    })?;
    sparse("peer", &mut out, &mut |r, v| {
        r.peer = Some(num(v)? as u32);
        Ok(())
    })?;
    sparse("msg_id", &mut out, &mut |r, v| {
        r.msg_id = Some(num(v)?);
        Ok(())
    })?;
    sparse("lamport", &mut out, &mut |r, v| {
        r.lamport = Some(num(v)?);
        Ok(())
    })?;
    sparse("vector", &mut out, &mut |r, v| {
        r.vector = Some(serde_json::from_value(v.clone()).map_err(|e| e.to_string())?);
        Ok(())
    })?;
    sparse("msg_kind", &mut out, &mut |r, v| {
        r.msg_kind = Some(text(v)?);
        Ok(())
    })?;
    sparse("timer", &mut out, &mut |r, v| {
        r.timer = Some(text(v)?);
        Ok(())
    })?;
    sparse("property", &mut out, &mut |r, v| {
        r.property = Some(text(v)?);
        Ok(())
    })?;
    sparse("detail", &mut out, &mut |r, v| {
        r.detail = Some(text(v)?);
        Ok(())
    })?;
    sparse("msg", &mut out, &mut |r, v| {
        r.msg = Some(word(v)?);
        Ok(())
    })?;
    sparse("request", &mut out, &mut |r, v| {
        r.request = Some(serde_json::from_value(word(v)?).map_err(|e| e.to_string())?);
        Ok(())
    })?;
    sparse("event", &mut out, &mut |r, v| {
        r.event = Some(serde_json::from_value(word(v)?).map_err(|e| e.to_string())?);
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_core::{Event, Request};

    /// Records with every field, uids that follow the nodes or not: read back equal.
    #[test]
    fn every_field_reads_back() {
        let mut a = TraceRecord::new(0, 0, RecordKind::Start);
        a.node = Some(0);
        a.uid = Some(1);
        a.lamport = Some(0);
        a.vector = Some(vec![0, 0]);
        let mut b = TraceRecord::new(1, 1_000_000, RecordKind::Send);
        b.node = Some(1);
        b.uid = Some(2);
        b.peer = Some(0);
        b.msg_id = Some(7);
        b.msg_kind = Some("grant".into());
        b.msg = Some(serde_json::json!({"Grant": {"fencing": 3}}));
        b.lamport = Some(1);
        let mut c = TraceRecord::new(1, 1_000_000, RecordKind::Timer);
        c.node = Some(1);
        c.uid = Some(2);
        c.timer = Some("HolderSilent { fencing: 1 }".into());
        let mut d = TraceRecord::new(2, 2_000_000, RecordKind::Request);
        d.node = Some(0);
        d.uid = Some(1);
        d.request = Some(Request::Acquire);
        let mut e = TraceRecord::new(2, 2_000_000, RecordKind::Emit);
        e.node = Some(0);
        e.uid = Some(1);
        e.event = Some(Event::Entered { fencing: 3 });
        let mut f = TraceRecord::new(3, 2_500_000, RecordKind::Violation);
        f.property = Some("safety".into());
        f.detail = Some("two holders".into());
        let mut g = TraceRecord::new(4, 3_000_000, RecordKind::Drop);
        g.node = Some(1);
        g.uid = Some(2);
        g.peer = Some(0);
        g.msg_id = Some(7);
        g.msg_kind = Some("grant".into());
        g.detail = Some("lost".into());
        let records = vec![a, b, c, d, e, f, g];
        let uids = [1, 2];
        let cols = serde_json::to_value(encode(&records, &uids)).unwrap();
        assert!(cols.get("uid").is_none(), "uids follow the nodes: no column");
        assert_eq!(cols["dict"].as_array().unwrap().len(), 8, "\"grant\" written once: {}", cols["dict"]);
        assert_eq!(decode(&cols, &uids).unwrap(), records);
        // Uids that do not follow the nodes (merged traces of real nodes) get their column.
        let mut odd = records.clone();
        odd[1].uid = Some(40);
        let cols = serde_json::to_value(encode(&odd, &uids)).unwrap();
        assert!(cols.get("uid").is_some());
        assert_eq!(decode(&cols, &uids).unwrap(), odd);
    }
}
