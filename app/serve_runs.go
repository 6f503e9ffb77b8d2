package app

import (
	"context"
	"os"

	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/jobs"
	"github.com/coderun/coderun/server/runs"
	"github.com/coderun/coderun/web"
)

// agentRuns is the agent-runs API under /v1/runs, /v1/review and
// /v1/stats (server/runs), over the store of the data directory (the
// default tenant's records are the CLI's). A shutdown suspends the runs it
// drives, resumable.
func agentRuns(s *Services) (server.Surface, error) {
	c := s.Config
	db, err := c.OpenRecords(context.Background())
	if err != nil {
		return server.Surface{}, err
	}
	s.OnClose(db.Close) // after the service below has stopped its runs
	svc, err := runs.New(runs.Options{Store: db, Agents: RunAgents{Config: c, Runtime: s.Runtime, Getenv: os.Getenv},
		MaxFileBytes: c.Server.MaxBody, Logger: s.Logger})
	if err != nil {
		return server.Surface{}, err
	}
	s.OnShutdown(svc.Shutdown) // the event streams end; Close suspends the runs
	s.OnClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), c.Server.Grace)
		defer cancel()
		return svc.Close(ctx)
	})
	return svc.Surface(), nil
}

// evalJobs is the batch-eval API under /v1/jobs (server/jobs), its items
// run with the configuration's limits, its jobs and verdicts kept in the
// store of the data directory.
func evalJobs(s *Services) (server.Surface, error) {
	db, err := s.Config.OpenRecords(context.Background())
	if err != nil {
		return server.Surface{}, err
	}
	s.OnClose(db.Close) // after the service below has stopped its jobs
	svc, err := jobs.New(jobs.Options{Runtime: s.Runtime, Store: db, Limits: s.Config.Limits})
	if err != nil {
		return server.Surface{}, err
	}
	s.OnShutdown(svc.Shutdown) // running jobs are interrupted (resumable); their streams end
	s.OnClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), s.Config.Server.Grace)
		defer cancel()
		return svc.Close(ctx)
	})
	return svc.Surface(), nil
}

// webView is the web view at / (package web).
func webView(*Services) (server.Surface, error) { return web.Surface(), nil }
