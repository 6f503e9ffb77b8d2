package openapitest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coderun/coderun/server/openapitest"
)

const doc = `{"openapi": "3.1.0", "paths": {
  "/v1/things/{id}": {"get": {"responses": {
    "200": {"description": "", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
    "204": {"description": "nothing"}}}},
  "/v1/things/{id}/files/{path}": {"get": {"responses": {"200": {"description": "", "content": {"image/*": {}}}}}}},
  "components": {"schemas": {"Thing": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}}}`

func TestCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(doc)) }))
	defer srv.Close()
	c, err := openapitest.New(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	const js = "application/json"
	for _, ok := range []struct {
		method, path, ct, body string
		status                 int
	}{
		{"GET", "/v1/things/7", js, `{"id": "7"}`, 200},
		{"GET", "/v1/things/7", "", "", 204},
		{"GET", "/v1/things/7/files/a/b.png", "image/png", "\x89PNG", 200},
	} {
		if err := c.Check(ok.method, ok.path, ok.status, ok.ct, []byte(ok.body)); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, bad := range []struct {
		method, path, ct, body string
		status                 int
		want                   string
	}{
		{"GET", "/v1/things/7", js, `{"name": "x"}`, 200, "does not match"},
		{"GET", "/v1/things/7", js, `{"id": "7"}`, 404, "does not list"},
		{"GET", "/v1/things/7", "text/plain", "7", 200, "not documented"},
		{"GET", "/v1/things/7", "", "body", 204, "no body"},
		{"POST", "/v1/things/7", js, `{}`, 200, "no POST"},
		{"GET", "/v1/nothing", js, `{}`, 200, "no documented path"},
	} {
		if err := c.Check(bad.method, bad.path, bad.status, bad.ct, []byte(bad.body)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if err := c.Event("Thing", []byte(`{"id": 1}`)); err == nil {
		t.Error("an event of the wrong shape passed")
	}
}
