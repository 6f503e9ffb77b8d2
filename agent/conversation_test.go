package agent

import (
	"encoding/json"
	"testing"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/store"
)

func callStep(t *testing.T, seq int, purpose string, prior int, msgs ...llm.Message) store.Step {
	t.Helper()
	b, err := json.Marshal(ModelCall{Purpose: purpose, Prior: prior, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	return store.Step{Seq: seq, Kind: StepModelCall, Data: b}
}

// A checkpoint holds only what no call has sent; the conversation comes
// back whole from the calls' records, the way commit wrote them.
func TestConversationRoundTrip(t *testing.T) {
	sys, task := llm.System("s"), llm.User("task")
	reply, result := llm.Assistant("calls run_code"), llm.ToolResult("c1", "NameError", true)
	reply2, result2 := llm.Assistant("again"), llm.ToolResult("c2", "ok", false)
	calls := []store.Step{
		callStep(t, 2, "generate", 0, sys, task),
		callStep(t, 6, "generate", 2, reply, result),
		callStep(t, 9, "interpret", 0, llm.System("i"), llm.User("interpret this")),
	}
	ckpt, err := json.Marshal(&state{Sent: 4, Unsent: []llm.Message{reply2, result2}, Messages: []llm.Message{sys}})
	if err != nil {
		t.Fatal(err)
	}
	var st state
	if err := json.Unmarshal(ckpt, &st); err != nil {
		t.Fatal(err)
	}
	if st.Messages != nil {
		t.Fatal("the checkpoint holds the conversation")
	}
	if err := st.conversation(calls); err != nil {
		t.Fatal(err)
	}
	want := []llm.Message{sys, task, reply, result, reply2, result2}
	if len(st.Messages) != len(want) || st.Sent != 4 || st.Unsent != nil {
		t.Fatalf("conversation: %+v (sent %d)", st.Messages, st.Sent)
	}
	for i := range want {
		if st.Messages[i].Content != want[i].Content || st.Messages[i].Role != want[i].Role {
			t.Errorf("message %d: %+v, want %+v", i, st.Messages[i], want[i])
		}
	}

	// Records that disagree with the checkpoint are an error, not a guess.
	bad := state{Sent: 5}
	if err := bad.conversation(calls); err == nil {
		t.Error("a checkpoint counting more sent messages than the calls hold was accepted")
	}
	gap := state{Sent: 4}
	if err := gap.conversation([]store.Step{callStep(t, 2, "generate", 0, sys), callStep(t, 3, "generate", 3, reply)}); err == nil {
		t.Error("a call following messages nobody recorded was accepted")
	}
}

// A checkpoint from before the conversation was stored once holds it
// whole, and its calls each recorded every message they sent.
func TestConversationFromOldCheckpoint(t *testing.T) {
	sys, task, reply, result := llm.System("s"), llm.User("task"), llm.Assistant("a"), llm.ToolResult("c1", "r", false)
	old := []byte(`{"phase":"generate","task":"task","messages":` + string(must(json.Marshal([]llm.Message{sys, task, reply, result}))) + `}`)
	var st state
	if err := json.Unmarshal(old, &st); err != nil {
		t.Fatal(err)
	}
	calls := []store.Step{callStep(t, 2, "generate", 0, sys, task)}
	if err := st.conversation(calls); err != nil {
		t.Fatal(err)
	}
	if len(st.Messages) != 4 || st.Sent != 2 || st.LegacyMessages != nil {
		t.Fatalf("conversation %+v, sent %d", st.Messages, st.Sent)
	}
	// Written again, the checkpoint holds only the unsent messages.
	st.Unsent = st.Messages[st.Sent:]
	b, _ := json.Marshal(&st)
	var again state
	json.Unmarshal(b, &again)
	if len(again.Unsent) != 2 || again.LegacyMessages != nil || again.Sent != 2 {
		t.Errorf("checkpoint rewritten: %s", b)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
