package standalone

import (
	"bytes"
	"testing"
)

// TestPrintChanges: the changed lines in the order of their keys, then the
// lines gone (printed before, not back), in the order of their keys; a line
// printed before with the same text is not printed again, whether or not
// it is among the changes.
func TestPrintChanges(t *testing.T) {
	var out bytes.Buffer
	r := &runner{cfg: Config{Out: &out}, lastLines: map[string]string{}}
	r.print("config", "ok")
	r.printChanges(map[string]string{"b": "B", "a": "A", "load f x": "error: bad", "c": "C"}, nil)
	if got, want := out.String(), "config: ok\na: A\nb: B\nc: C\nload f x: error: bad\n"; got != want {
		t.Errorf("first:\n%s\nwant\n%s", got, want)
	}
	out.Reset()
	// a unchanged, b changed; c, the load problem and config gone (config
	// is never gone), d gone but never printed, e gone but back.
	r.printChanges(map[string]string{"a": "A", "b": "B2", "e": "E"}, []string{"load f x", "d", "c", "config", "c", "e"})
	if got, want := out.String(), "b: B2\ne: E\nc: gone\nload f x: resolved\n"; got != want {
		t.Errorf("second:\n%s\nwant\n%s", got, want)
	}
	out.Reset()
	r.printChanges(map[string]string{"c": "C"}, nil)
	if got, want := out.String(), "c: C\n"; got != want {
		t.Errorf("third (c back):\n%s\nwant\n%s", got, want)
	}
}
