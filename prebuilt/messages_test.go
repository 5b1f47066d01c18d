package prebuilt

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
)

func msg(id, text string) model.Message {
	return model.Message{ID: id, Role: model.RoleUser, Content: text}
}

func contents(ms []model.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func TestMergeRules(t *testing.T) {
	a, b, c := msg("a", "A"), msg("b", "B"), msg("c", "C")
	tests := []struct {
		name    string
		current []model.Message
		update  []model.Message
		want    []string
		wantErr error
	}{
		{"append", []model.Message{a}, []model.Message{b, c}, []string{"A", "B", "C"}, nil},
		{"append to empty", nil, []model.Message{a}, []string{"A"}, nil},
		{"replace in place", []model.Message{a, b, c}, []model.Message{msg("b", "B2")}, []string{"A", "B2", "C"}, nil},
		{"replace and append", []model.Message{a, b}, []model.Message{msg("a", "A2"), c}, []string{"A2", "B", "C"}, nil},
		{"replace within the update", []model.Message{a}, []model.Message{b, msg("b", "B2")}, []string{"A", "B2"}, nil},
		{"remove", []model.Message{a, b, c}, []model.Message{model.Remove("b")}, []string{"A", "C"}, nil},
		{"remove one just added", []model.Message{a}, []model.Message{b, model.Remove("b")}, []string{"A"}, nil},
		{"remove unknown", []model.Message{a}, []model.Message{model.Remove("zz")}, nil, ErrUnknownMessage},
		{"remove all", []model.Message{a, b}, []model.Message{model.RemoveAll()}, []string{}, nil},
		{"remove all keeps what follows", []model.Message{a, b}, []model.Message{c, model.RemoveAll(), msg("d", "D")}, []string{"D"}, nil},
		{"last remove all wins", []model.Message{a}, []model.Message{model.RemoveAll(), b, model.RemoveAll(), c}, []string{"C"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.current)
			got, err := Merge(tc.current, tc.update)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Merge error = %v, want %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(tc.current, before) {
				t.Fatalf("Merge changed current: %v, was %v", tc.current, before)
			}
			if tc.wantErr != nil {
				var ue *UnknownMessageError
				if !errors.As(err, &ue) || ue.ID != "zz" {
					t.Fatalf("error %v is not an *UnknownMessageError for zz", err)
				}
				// The reducer ignores the marker instead.
				got, _ = merge(tc.current, tc.update, false)
				if !slices.Equal(contents(got), []string{"A"}) {
					t.Fatalf("lenient merge = %v, want [A]", contents(got))
				}
				return
			}
			if !slices.Equal(contents(got), tc.want) {
				t.Fatalf("Merge = %v, want %v", contents(got), tc.want)
			}
		})
	}
}

func TestMergeCopyOnWrite(t *testing.T) {
	// A current slice with spare capacity, as a state's slice has.
	current := make([]model.Message, 3, 8)
	current[0], current[1], current[2] = msg("a", "A"), msg("b", "B"), msg("c", "C")
	reader := current[:3:3] // what another reader holds
	got, _ := merge(current, []model.Message{msg("b", "B2"), msg("d", "D")}, false)
	if !slices.Equal(contents(reader), []string{"A", "B", "C"}) {
		t.Fatalf("replacing changed the shared elements: %v", contents(reader))
	}
	if !slices.Equal(contents(got), []string{"A", "B2", "C", "D"}) {
		t.Fatalf("merge = %v", contents(got))
	}
	got, _ = merge(current, []model.Message{model.Remove("a")}, false)
	if !slices.Equal(contents(reader), []string{"A", "B", "C"}) || !slices.Equal(contents(got), []string{"B", "C"}) {
		t.Fatalf("remove: reader %v, got %v", contents(reader), contents(got))
	}
}

func TestMergeLongConversation(t *testing.T) {
	// Past indexThreshold merge finds ids through a map: same results.
	var current []model.Message
	for i := range 100 {
		current = append(current, msg(string(rune('A'+i%26))+string(rune('a'+i/26)), "x"))
	}
	upd := []model.Message{msg(current[10].ID, "replaced"), model.Remove(current[20].ID), msg("new", "appended")}
	got, err := Merge(current, upd)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 || got[10].Content != "replaced" || got[99].Content != "appended" || got[20].ID != current[21].ID {
		t.Fatalf("long merge wrong: len %d, [10]=%q, [99]=%q", len(got), got[10].Content, got[99].Content)
	}
}

func TestMergeGivesIDs(t *testing.T) {
	noID := model.Message{Role: model.RoleUser, Content: "hi"}
	got1, _ := Merge([]model.Message{msg("a", "A")}, []model.Message{noID, noID})
	got2, _ := Merge([]model.Message{msg("a", "A")}, []model.Message{noID, noID})
	if got1[1].ID == "" || got1[2].ID == "" {
		t.Fatalf("no ids given: %+v", got1)
	}
	if got1[1].ID == got1[2].ID {
		t.Fatalf("two equal messages got the same id %q", got1[1].ID)
	}
	if got1[1].ID != got2[1].ID || got1[2].ID != got2[2].ID {
		t.Fatal("ids are not deterministic: folding the same writes again gives other ids")
	}
	other, _ := Merge([]model.Message{msg("b", "A")}, []model.Message{noID})
	if other[1].ID == got1[1].ID {
		t.Fatal("the same message after a different one got the same id")
	}
}

func TestRemoveMessages(t *testing.T) {
	current := []model.Message{msg("a", "A"), msg("b", "B")}
	markers, err := RemoveMessages(current, "b")
	if err != nil || len(markers) != 1 || markers[0].Role != model.RoleRemove || markers[0].ID != "b" {
		t.Fatalf("RemoveMessages = %v, %v", markers, err)
	}
	if _, err := RemoveMessages(current, "a", "nope"); !errors.Is(err, ErrUnknownMessage) {
		t.Fatalf("RemoveMessages of an unknown id: err = %v", err)
	}
}

// A thread rebuilt from storage folds the stored writes again: the ids the
// reducer gave must come out the same.
func TestAddMessagesRebuildKeepsIDs(t *testing.T) {
	ctx := context.Background()
	saver := checkpoint.NewMemory()
	build := func() *graph.Graph[MessagesState] {
		g, err := graph.New(Messages).
			AddNodeFunc("echo", func(ctx context.Context, s MessagesState) (graph.Update[MessagesState], error) {
				last := s.Messages[len(s.Messages)-1]
				return graph.Updates(Messages.Add(model.Message{Role: model.RoleAssistant, Content: "echo: " + last.Content})), nil
			}).
			AddEdge(graph.START, "echo").AddEdge("echo", graph.END).
			Compile(graph.WithSaver(saver))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := build()
	var res graph.Result[MessagesState]
	var err error
	for _, text := range []string{"one", "two"} {
		res, err = g.Invoke(ctx, graph.Updates(Messages.Add(model.Message{Role: model.RoleUser, Content: text})), graph.WithThread("t"))
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(res.State.Messages) != 4 {
		t.Fatalf("got %d messages, want 4", len(res.State.Messages))
	}
	snap, err := build().GetState(ctx, graph.WithThread("t"))
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range res.State.Messages {
		if m.ID == "" || snap.Values.Messages[i].ID != m.ID {
			t.Fatalf("message %d: id %q in the run, %q after rebuilding", i, m.ID, snap.Values.Messages[i].ID)
		}
	}
}
