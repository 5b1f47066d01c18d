//go:build linux

package local

import "testing"

func TestDirectPython(t *testing.T) {
	py := []string{"/usr/bin/python3", "-I"}
	def := []string{"HOME=/home/user", "PATH=" + pathEnv}
	cases := []struct {
		command string
		env     []string
		py      []string
		want    string
	}{
		{"python3 main.py", def, py, "'/usr/bin/python3' '-I' main.py"},
		{"python3", def, py, "'/usr/bin/python3' '-I'"},
		{"python -c 'print(1)'; echo done", def, py, "'/usr/bin/python3' '-I' -c 'print(1)'; echo done"},
		{"python3\tx.py", def, py, "'/usr/bin/python3' '-I'\tx.py"},
		{"python3.11 x.py", def, py, "python3.11 x.py"},
		{"pythonic", def, py, "pythonic"},
		{"echo python3", def, py, "echo python3"},
		{" python3 x.py", def, py, " python3 x.py"},
		{"python3 () { echo hi; }; python3", def, py, "python3 () { echo hi; }; python3"},
		{"python3() { echo hi; }; python3", def, py, "python3() { echo hi; }; python3"},
		{"python3 x.py", []string{"PATH=/home/user/venv/bin:" + pathEnv}, py, "python3 x.py"},
		{"python3 x.py", def, []string{"/usr/bin/python3"}, "python3 x.py"},
	}
	for _, c := range cases {
		if got := directPython(c.command, c.env, c.py); got != c.want {
			t.Errorf("directPython(%q, %v, %v) = %q, want %q", c.command, c.env, c.py, got, c.want)
		}
	}
}
