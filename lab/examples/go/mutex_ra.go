// Ricart-Agrawala mutual exclusion as a lab node, in Go with its standard library only
// (docs/LAB.md): the same rules as lab/examples/mutex_ra.py, to show that the protocol is
// the language's business, not the lab's.
//
//	go build -o ra lab/examples/go/mutex_ra.go
//	ringleader lab run --family mutex --bin ./ra --nodes 5 --algo-like ricart-agrawala --lockstep
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

type message struct {
	Src  string         `json:"src"`
	Dest string         `json:"dest"`
	Body map[string]any `json:"body"`
}

var (
	me         string
	myID       int
	peers      []string
	clock      int
	requesting bool
	holding    bool
	myTS       int
	replies    = map[string]bool{}
	deferred   []string
	client     string
	clientMsg  any
	nextID     int
	out        = bufio.NewWriter(os.Stdout)
)

func send(dest string, body map[string]any) {
	nextID++
	body["msg_id"] = nextID
	line, _ := json.Marshal(message{me, dest, body})
	out.Write(line)
	out.WriteByte('\n')
	out.Flush()
}

func id(name string) int {
	n, _ := strconv.Atoi(name[1:])
	return n
}

func enter() {
	requesting, holding = false, true
	send(client, map[string]any{"type": "acquire_ok", "in_reply_to": clientMsg})
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var m message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "bad line:", err)
			continue
		}
		b := m.Body
		switch b["type"] {
		case "init":
			me = b["node_id"].(string)
			myID = id(me)
			for _, n := range b["node_ids"].([]any) {
				if n.(string) != me {
					peers = append(peers, n.(string))
				}
			}
			send(m.Src, map[string]any{"type": "init_ok", "in_reply_to": b["msg_id"]})
		case "acquire":
			clock++
			requesting, myTS, replies = true, clock, map[string]bool{}
			client, clientMsg = m.Src, b["msg_id"]
			for _, p := range peers {
				send(p, map[string]any{"type": "request", "ts": clock})
			}
			if len(peers) == 0 {
				enter()
			}
		case "request":
			ts := int(b["ts"].(float64))
			if ts > clock {
				clock = ts
			}
			clock++
			older := requesting && (myTS < ts || (myTS == ts && myID < id(m.Src)))
			if holding || older {
				deferred = append(deferred, m.Src) // reply when we leave
			} else {
				send(m.Src, map[string]any{"type": "reply"})
			}
		case "reply":
			replies[m.Src] = true
			if requesting && len(replies) == len(peers) {
				enter()
			}
		case "release":
			holding = false
			for _, p := range deferred {
				send(p, map[string]any{"type": "reply"})
			}
			deferred = nil
			send(m.Src, map[string]any{"type": "release_ok", "in_reply_to": b["msg_id"]})
		}
		send("lab", map[string]any{"type": "lab_done"})
	}
}
