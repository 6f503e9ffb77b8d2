package store

import "context"

// Export is a run with everything recorded about it, for JSON export.
type Export struct {
	Run     *Run         `json:"run"`
	Steps   []Step       `json:"steps"`
	Files   []File       `json:"files"`
	Reviews []ReviewItem `json:"reviews,omitempty"`
}

// Gather collects a run's whole record from a tenant's store. File
// contents are included only with contents set.
func Gather(ctx context.Context, s Tenant, runID string, contents bool) (*Export, error) {
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	steps, err := s.Steps(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	files, err := s.Files(ctx, run.ID, "")
	if err != nil {
		return nil, err
	}
	if !contents {
		for i := range files {
			files[i].Content = nil
		}
	}
	reviews, err := s.Reviews(ctx, run.ID, true)
	if err != nil {
		return nil, err
	}
	if steps == nil {
		steps = []Step{}
	}
	if files == nil {
		files = []File{}
	}
	return &Export{Run: run, Steps: steps, Files: files, Reviews: reviews}, nil
}
