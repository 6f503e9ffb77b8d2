package e2b

import "testing"

func TestWorkspacePath(t *testing.T) {
	ok := map[string]string{
		"/home/user":            "",
		"/home/user/":           "",
		"/work":                 "",
		".":                     "",
		"data.csv":              "data.csv",
		"/home/user/a/b.txt":    "a/b.txt",
		"/work/a/./b.txt":       "a/b.txt",
		"/home/user/a/../b.txt": "b.txt",
		"a//b":                  "a/b",
	}
	for in, want := range ok {
		got, err := workspacePath(in)
		if err != nil || got != want {
			t.Errorf("workspacePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "/home/user/../../etc/passwd", "../x", "a/../../x", "/home/userx", "/workspace", "a\x00b"} {
		if got, err := workspacePath(bad); err == nil {
			t.Errorf("workspacePath(%q) = %q, want an error", bad, got)
		}
	}
}
