// Package jupyter defines Jupyter's notebook format (nbformat 4): a
// Notebook of cells (code, markdown, raw), a code cell's outputs (stream,
// display_data, execute_result, error) with their MIME bundles, and
// reading and writing them.
//
// What it writes is what Jupyter writes (keys sorted, one space of
// indentation), validates against nbformat's schema and opens unchanged.
// What it reads is checked first, strictly, because notebooks come from
// users: a malformed file is refused with a *NotebookError that gives the
// line and column and what was expected there, in the notebook's own terms;
// an accepted one keeps every cell and all metadata.
//
// It is the one place these shapes are defined: sessions keep their cells'
// outputs as its Output and export their history as its Notebook, the
// agent renders a run as one, and a server will serve them.
package jupyter
