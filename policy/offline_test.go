package policy

import (
	"context"
	"strings"
	"testing"
)

// In a sandbox without network, network code the policy would ask about is
// denied with the reason, not put to a person; everything else is decided
// as online.
func TestDecideOffline(t *testing.T) {
	p := DefaultPolicy()
	net := finding(RuleNetwork, 2)

	if d := p.Decide([]Finding{net}); d.Action != Ask {
		t.Fatalf("online: action %s, want ask", d.Action)
	}
	d := p.DecideOffline([]Finding{net})
	if d.Action != Deny || len(d.Causes) != 1 || d.Causes[0].Rule != RuleNetwork {
		t.Fatalf("offline: action %s causes %+v, want deny for the network finding", d.Action, d.Causes)
	}
	for _, want := range []string{"Denied", "no network access", "would fail", "line 2", "[network]", "without the network"} {
		if !strings.Contains(d.Explanation, want) {
			t.Errorf("offline explanation lacks %q: %s", want, d.Explanation)
		}
	}
	if strings.Contains(d.Explanation, "policy forbids") {
		t.Errorf("offline explanation blames the policy: %s", d.Explanation)
	}

	// Other findings keep their actions; one that needs approval is named.
	spawn := finding(RuleProcessSpawn, 1)
	if d := p.DecideOffline([]Finding{spawn}); d.Action != Ask {
		t.Errorf("offline, process.spawn alone: action %s, want ask", d.Action)
	}
	d = p.DecideOffline([]Finding{spawn, net})
	if d.Action != Deny || len(d.Causes) != 1 || !strings.Contains(d.Explanation, "need a person's approval: line 1") {
		t.Errorf("offline, spawn and network: action %s causes %+v, explanation %s", d.Action, d.Causes, d.Explanation)
	}
	rm := finding(RuleRmRoot, 3)
	d = p.DecideOffline([]Finding{net, rm})
	if d.Action != Deny || len(d.Causes) != 2 ||
		!strings.Contains(d.Explanation, "1 operation the policy forbids: line 3") ||
		!strings.Contains(d.Explanation, "also uses the network, which this sandbox does not have: line 2") {
		t.Errorf("offline, network and rm -rf /: action %s causes %+v, explanation %s", d.Action, d.Causes, d.Explanation)
	}

	// A policy that allows network code lets it run, with a note.
	allow, err := ParsePolicy([]byte("rules:\n  network: allow\n"))
	if err != nil {
		t.Fatal(err)
	}
	d = allow.DecideOffline([]Finding{net})
	if d.Action != Allow || !strings.Contains(d.Explanation, "no network access, so the network operations will fail") {
		t.Errorf("network: allow, offline: action %s, explanation %s", d.Action, d.Explanation)
	}
	if d := allow.Decide([]Finding{net}); strings.Contains(d.Explanation, "no network") {
		t.Errorf("network: allow, online: explanation speaks of no network: %s", d.Explanation)
	}

	// One that denies it denies it, saying why it could not work anyway.
	deny, err := ParsePolicy([]byte("rules:\n  network: deny\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d := deny.DecideOffline([]Finding{net}); d.Action != Deny || !strings.Contains(d.Explanation, "no network access") {
		t.Errorf("network: deny, offline: action %s, explanation %s", d.Action, d.Explanation)
	}
}

func TestReviewerOffline(t *testing.T) {
	code := "import urllib.request\nprint(urllib.request.urlopen('https://example.com').read())"
	online, err := (&Reviewer{}).Review(context.Background(), Python, code)
	if err != nil {
		t.Fatal(err)
	}
	offline, err := (&Reviewer{Offline: true}).Review(context.Background(), Python, code)
	if err != nil {
		t.Fatal(err)
	}
	if online.Action != Ask || offline.Action != Deny || !strings.Contains(offline.Explanation, "no network access") {
		t.Errorf("online %s, offline %s (%s); want ask, then deny saying there is no network",
			online.Action, offline.Action, offline.Explanation)
	}
	if d, _ := (&Reviewer{Offline: true}).Review(context.Background(), Shell, "pip install requests"); d.Action != Deny {
		t.Errorf("offline pip install: %s, want deny", d.Action)
	}
}
