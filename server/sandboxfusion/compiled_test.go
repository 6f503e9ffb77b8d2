package sandboxfusion_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coderun/coderun/server/sandboxfusion"
)

// Compiled languages answer their compile step as compile_result, and
// verl tells a compile error and a compile timeout (-4) from a runtime
// error (-2) and a right answer. The toolchains are installed by
// scripts/setup.sh.
func TestVerlCompiledLanguages(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sandboxfusion.Options{})
	const cppDouble = "#include <iostream>\nint main() { long n; std::cin >> n; std::cout << n * 2 << std::endl; }\n"
	for _, c := range []struct {
		name, language, code string
		compileTimeout       float64
		want                 any
		status               string
		compileStatus        string
		run                  bool // run_result is not null
	}{
		{"cpp right answer", "cpp", cppDouble, 30, true, "success", "Finished", true},
		{"cpp compile error", "cpp", "int main() { return undefined_name; }\n", 30, -4, "compile_error", "Finished", false},
		{"cpp compile timeout", "cpp", cppDouble, 0.001, -4, "compile_timeout", "TimeLimitExceeded", false},
		{"cpp runtime error", "cpp", "#include <cstdlib>\nint main() { std::abort(); }\n", 30, -2, "runtime_error", "Finished", true},
		{"java right answer", "java", "import java.util.Scanner;\npublic class Main { public static void main(String[] a) { System.out.println(new Scanner(System.in).nextLong() * 2); } }\n", 60, true, "success", "Finished", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req := verlRequest(c.code, str("21\n"), 30, c.language)
			req["compile_timeout"] = c.compileTimeout
			code, resp := post(t, srv.URL+"/run_code", req)
			if code != http.StatusOK {
				t.Fatalf("HTTP %d: %v", code, resp)
			}
			got, status := verlClassify(resp, str("42"))
			if got != c.want || status != c.status {
				t.Fatalf("verl reads %v (%s), want %v (%s)\n%v", got, status, c.want, c.status, resp)
			}
			compile, _ := resp["compile_result"].(map[string]any)
			if compile == nil || compile["status"] != c.compileStatus {
				t.Fatalf("compile_result %v, want status %s", resp["compile_result"], c.compileStatus)
			}
			if _, ok := compile["stderr"].(string); !ok {
				t.Errorf("the compiler's stderr is %v, not a string", compile["stderr"])
			}
			if c.status == "compile_error" && !strings.Contains(compile["stderr"].(string), "undefined_name") {
				t.Errorf("the compiler's diagnostics are not in compile_result.stderr: %q", compile["stderr"])
			}
			if run := resp["run_result"]; (run != nil) != c.run {
				t.Errorf("run_result %v", run)
			}
		})
	}
}
