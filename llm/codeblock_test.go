package llm_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/llm"
)

func TestSelectCode(t *testing.T) {
	cases := []struct {
		name     string
		text     string
		def      language.Language
		wantLang language.Language
		wantCode string // "" means no code selected
	}{
		{"python", "Run this:\n```python\nprint(1)\n```\nDone.", "python", "python", "print(1)\n"},
		{"py tag", "```py\nx = 1\n```", "bash", "python", "x = 1\n"},
		{"python3 and case", "```Python3\nx = 1\n```", "", "python", "x = 1\n"},
		{"bash", "```bash\necho hi\n```", "python", "bash", "echo hi\n"},
		{"sh", "```sh\nls -l\n```", "python", "bash", "ls -l\n"},
		{"shell", "```shell\npwd\n```", "python", "bash", "pwd\n"},
		{"js", "```js\nconsole.log(1)\n```", "python", "node", "console.log(1)\n"},
		{"node", "```node\nconsole.log(2)\n```", "python", "node", "console.log(2)\n"},
		{"untagged takes the default", "```\nprint(2)\n```", "python", "python", "print(2)\n"},
		{"untagged with a default alias", "```\necho 2\n```", "sh", "bash", "echo 2\n"},
		{"no blocks", "The answer is 42.", "python", "", ""},
		{"only an unknown language", "```ruby\nputs 1\n```", "python", "", ""},
		{"info string extras", "```python title=\"a.py\"\nprint(3)\n```", "", "python", "print(3)\n"},
		{"pandoc braces", "```{.python}\nprint(4)\n```", "", "python", "print(4)\n"},
		{"tildes", "~~~python\nprint(5)\n~~~", "", "python", "print(5)\n"},
		{"longer fence holds a shorter one", "````python\ns = '''\n```\n'''\nprint(s)\n````", "", "python", "s = '''\n```\n'''\nprint(s)\n"},
		{"CRLF", "```python\r\nprint(6)\r\n```\r\n", "", "python", "print(6)\n"},
		{"indented in a list item", "1. Run:\n   ```python\n   for i in range(2):\n       print(i)\n   ```", "", "python", "for i in range(2):\n    print(i)\n"},
		{"inline triple backticks are not a fence", "Use ```print(1)``` inline.\n```python\nprint(7)\n```", "", "python", "print(7)\n"},
		{"blank block", "```python\n  \n```", "", "", ""},

		// Several blocks: the last run of one language, joined.
		{"consecutive blocks of a language are joined",
			"First:\n```python\nimport math\n```\nThen:\n```python\nprint(math.pi)\n```", "",
			"python", "import math\n\nprint(math.pi)\n"},
		{"an install step in another language is dropped",
			"```bash\npip install numpy\n```\n```python\nimport numpy\n```", "",
			"python", "import numpy\n"},
		{"the last language wins",
			"```python\nprint(1)\n```\nor in shell:\n```bash\necho 1\n```", "",
			"bash", "echo 1\n"},
		{"a run restarts after another language",
			"```python\na = 1\n```\n```bash\nls\n```\n```python\nb = 2\n```\n```python\nprint(b)\n```", "",
			"python", "b = 2\n\nprint(b)\n"},
		{"output blocks do not break a run",
			"```python\nx = 2\n```\nOutput:\n```text\n2\n```\n```python\nprint(x)\n```", "",
			"python", "x = 2\n\nprint(x)\n"},
		{"untagged blocks are output when code is tagged",
			"```python\nprint('hi')\n```\nprints:\n```\nhi\n```", "python",
			"python", "print('hi')\n"},
		{"all untagged: all code",
			"```\nx = 1\n```\n```\nprint(x)\n```", "python",
			"python", "x = 1\n\nprint(x)\n"},
		{"an unterminated block is not run",
			"```python\nprint(1)\n```\n```python\nprint(2", "",
			"python", "print(1)\n"},
		{"only an unterminated block", "```python\nwhile True:\n", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := llm.SelectCode(llm.ExtractCode(c.text, c.def))
			if c.wantCode == "" {
				if ok {
					t.Fatalf("selected %+v, want nothing", got)
				}
				return
			}
			if !ok {
				t.Fatalf("nothing selected, want %s %q", c.wantLang, c.wantCode)
			}
			if got.Language != c.wantLang || got.Code != c.wantCode || !got.Complete {
				t.Errorf("got %s %q, want %s %q", got.Language, got.Code, c.wantLang, c.wantCode)
			}
		})
	}
}

func TestExtractCode(t *testing.T) {
	text := "```python\na\n```\n```json\n{}\n```\n```\nb\n```\n```sh\nc"
	got := llm.ExtractCode(text, "python")
	want := []llm.CodeBlock{
		{Language: "python", Tag: "python", Code: "a\n", Complete: true},
		{Language: "json", Tag: "json", Code: "{}\n", Complete: true},
		{Language: "python", Tag: "", Code: "b\n", Complete: true},
		{Language: "bash", Tag: "sh", Code: "c\n", Complete: false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ExtractCode =\n%+v\nwant\n%+v", got, want)
	}
	if got[1].Runnable() || !got[0].Runnable() {
		t.Error("Runnable wrong")
	}
}

func TestNormalizeLanguage(t *testing.T) {
	for in, want := range map[string]language.Language{
		"python": "python", "PY": "python", "ipython": "python",
		"bash": "bash", "sh": "bash", "shell": "bash",
		"js": "node", "node": "node", "JavaScript": "node", "nodejs": "node",
	} {
		if got, ok := llm.NormalizeLanguage(in); !ok || got != want {
			t.Errorf("NormalizeLanguage(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "ruby", "text", "console"} {
		if got, ok := llm.NormalizeLanguage(in); ok {
			t.Errorf("NormalizeLanguage(%q) = %q, want not ok", in, got)
		}
	}
}

func ExampleSelectCode() {
	reply := "First load the data:\n" +
		"```bash\npip install pandas\n```\n" +
		"```python\nimport pandas as pd\ndf = pd.DataFrame({'x': [1, 2]})\n```\n" +
		"Then sum it:\n" +
		"```python\nprint(df.x.sum())\n```\n" +
		"Output:\n```\n3\n```\n"
	code, ok := llm.SelectCode(llm.ExtractCode(reply, llm.Python))
	fmt.Println(ok, code.Language)
	fmt.Print(code.Code)
	// Output:
	// true python
	// import pandas as pd
	// df = pd.DataFrame({'x': [1, 2]})
	//
	// print(df.x.sum())
}
