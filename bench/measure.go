package bench

import "github.com/coderun/coderun/bench/measure"

// The measurements every benchmark here prints, from package measure
// (which imports nothing of coderun's, so that any package's benchmarks
// can use it without importing this one).
type (
	// Host describes the machine a benchmark ran on (measure.Host).
	Host = measure.Host
	// CPU is CPU time split into user and system time (measure.CPU).
	CPU = measure.CPU
)

// DetectHost reads what this machine says of itself (measure.DetectHost).
func DetectHost() Host { return measure.DetectHost() }

// TreeCPU is the CPU time of this process and all it started (measure.TreeCPU).
func TreeCPU() CPU { return measure.TreeCPU() }

// MachineCPU is the CPU time the whole machine has spent (measure.MachineCPU).
func MachineCPU() CPU { return measure.MachineCPU() }
