// Package sqlite is coderun's default store of agent runs: one SQLite
// file (modernc.org/sqlite, pure Go, no cgo) in a data directory
// ([DefaultDir]), shared safely by several processes (WAL mode, immediate
// transactions, a busy timeout). [DB] implements [store.Store] and passes
// the shared suite of package store/storetest.
//
// Every table has the tenant in its key and every statement names the
// tenant of the handle it runs on ([DB.Tenant]). Leases are a column of
// the run (lease_until), compared with the clock of the process asking,
// which for one file on one machine is one clock.
//
// The schema is versioned (PRAGMA user_version) and migrated on open:
// version 1's records (before tenants and leases) move to
// store.DefaultTenant, their owners without a lease (schema.go).
package sqlite
