package eval

import (
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Sample is one candidate solution for a task, as in HumanEval's samples
// files: {"task_id": ..., "completion": ...}. A task may have many.
type Sample struct {
	TaskID     string
	Completion string
	// Index counts the task's samples in file order, from 0.
	Index int
	// Source and Line say where the sample came from.
	Source string
	Line   int
}

// SampleID is the item id of a task's index-th sample: "HumanEval/0#3".
func SampleID(taskID string, index int) string { return taskID + "#" + strconv.Itoa(index) }

// Item is the item that runs the sample against problem p.
func (s Sample) Item(p *Problem) Item {
	it := p.Item(s.Completion)
	it.ID, it.Sample = SampleID(s.TaskID, s.Index), s.Index
	return it
}

// ReadSamples reads sample lines from r and joins each to its problem,
// returning the items to run in file order. A bad line (malformed JSON, no
// task_id or completion, a task id that names no problem) is reported to bad
// with its line number and skipped, unless bad returns an error, which stops
// reading and is returned.
func ReadSamples(r io.Reader, name string, problems []*Problem, bad BadLineFunc) ([]Item, error) {
	byID := make(map[string]*Problem, len(problems))
	for _, p := range problems {
		byID[p.TaskID] = p
	}
	count := map[string]int{}
	var items []Item
	err := lines(r, name, bad, func(line []byte, n int) error {
		s, err := parseSample(line)
		var p *Problem
		if err == nil {
			if p = byID[s.TaskID]; p == nil {
				err = fmt.Errorf("unknown task_id %q (not among the %d problems)", s.TaskID, len(problems))
			}
		}
		if err != nil {
			return bad(&LineError{File: name, Line: n, Err: err})
		}
		s.Index, s.Source, s.Line = count[s.TaskID], name, n
		count[s.TaskID]++
		items = append(items, s.Item(p))
		return nil
	})
	return items, err
}

func parseSample(line []byte) (Sample, error) {
	var s Sample
	f, err := decodeObject(line)
	if err != nil {
		return s, err
	}
	if s.TaskID, err = f.id("task_id"); err != nil {
		return s, err
	}
	if !f.has("completion") {
		return s, errors.New(`missing field "completion"`)
	}
	err = f.str("completion", &s.Completion, true)
	return s, err
}
