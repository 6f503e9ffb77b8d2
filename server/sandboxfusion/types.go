package sandboxfusion

// The wire types, as SandboxFusion's server declares them
// (sandbox/server/sandbox_api.py and sandbox/runners/types.py there).

// RunStatus is the top-level status of an answer.
type RunStatus string

// The statuses of an answer. HTTP status is 200 with each.
const (
	// StatusSuccess: every step finished with return code 0.
	StatusSuccess RunStatus = "Success"
	// StatusFailed: a step exited non-zero or reached its time limit (or,
	// for /run_jupyter, the cells did not finish).
	StatusFailed RunStatus = "Failed"
	// StatusSandboxError: the sandbox could not run the code; Message says
	// why.
	StatusSandboxError RunStatus = "SandboxError"
)

// CommandStatus is how one step (compile, run, the Jupyter driver) ended.
type CommandStatus string

// The statuses of a step.
const (
	// CommandFinished: the process ended by itself; ReturnCode says how.
	CommandFinished CommandStatus = "Finished"
	// CommandError: the step could not be run; Stderr says why.
	CommandError CommandStatus = "Error"
	// CommandTimeLimitExceeded: the step reached its time limit and was
	// stopped; ReturnCode is null, the output so far is kept.
	CommandTimeLimitExceeded CommandStatus = "TimeLimitExceeded"
)

// CommandRunResult is what one step did.
type CommandRunResult struct {
	Status CommandStatus `json:"status"`
	// ExecutionTime is the step's wall time in seconds.
	ExecutionTime *float64 `json:"execution_time"`
	// ReturnCode is the exit status, negative for a signal (as Python's
	// subprocess reports it); null when the step did not finish.
	ReturnCode *int    `json:"return_code"`
	Stdout     *string `json:"stdout"`
	Stderr     *string `json:"stderr"`
}

// RunCodeRequest is the body of POST /run_code. Pointers tell an absent
// field from a zero one; fields SandboxFusion does not know are ignored,
// as its server ignores them.
type RunCodeRequest struct {
	Code *string `json:"code"`
	// Language is SandboxFusion's name ("python", "cpp", "nodejs", ...);
	// absent or null means python.
	Language       *string  `json:"language"`
	CompileTimeout *float64 `json:"compile_timeout"`
	RunTimeout     *float64 `json:"run_timeout"`
	// MemoryLimitMB (memory_limit_MB) at or below 0 means the server's
	// default memory limit.
	MemoryLimitMB *float64 `json:"memory_limit_MB"`
	Stdin         *string  `json:"stdin"`
	// Files maps paths in the workspace to base64 content; null values
	// are skipped.
	Files      map[string]*string `json:"files"`
	FetchFiles []string           `json:"fetch_files"`
	// Args (extra pytest arguments on a side branch of SandboxFusion) is
	// accepted and not used.
	Args []string `json:"args"`
}

// RunCodeResponse is the answer of POST /run_code.
type RunCodeResponse struct {
	Status  RunStatus `json:"status"`
	Message string    `json:"message"`
	// CompileResult is null for interpreted languages; RunResult is null
	// when compiling failed or the code could not be run at all.
	CompileResult   *CommandRunResult `json:"compile_result"`
	RunResult       *CommandRunResult `json:"run_result"`
	ExecutorPodName *string           `json:"executor_pod_name"`
	// Files are the fetched files, base64.
	Files map[string]string `json:"files"`
}

// RunJupyterRequest is the body of POST /run_jupyter.
type RunJupyterRequest struct {
	Cells []string `json:"cells"`
	// CellTimeout bounds each cell in seconds (0: only the total bounds
	// it); TotalTimeout bounds all of them (default 45).
	CellTimeout   *float64           `json:"cell_timeout"`
	TotalTimeout  *float64           `json:"total_timeout"`
	MemoryLimitMB *float64           `json:"memory_limit_MB"`
	Kernel        *string            `json:"kernel"`
	Files         map[string]*string `json:"files"`
	FetchFiles    []string           `json:"fetch_files"`
}

// CellRunResult is what one cell of /run_jupyter did: its streams, the
// MIME bundles it displayed (execute_result and display_data), and its
// errors (ename, evalue, traceback).
type CellRunResult struct {
	Stdout  string           `json:"stdout"`
	Stderr  string           `json:"stderr"`
	Display []map[string]any `json:"display"`
	Error   []map[string]any `json:"error"`
}

// RunJupyterResponse is the answer of POST /run_jupyter.
type RunJupyterResponse struct {
	Status          RunStatus         `json:"status"`
	Message         string            `json:"message"`
	Driver          *CommandRunResult `json:"driver"`
	Cells           []CellRunResult   `json:"cells"`
	ExecutorPodName *string           `json:"executor_pod_name"`
	Files           map[string]string `json:"files"`
}

func ptr[T any](v T) *T { return &v }
