package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/coderun/coderun/sandbox"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxRead is the most files_read and a resource read return of a file.
const maxRead = 8 << 20

// FilesUploadInput is files_upload's input.
type FilesUploadInput struct {
	Session string      `json:"session" jsonschema:"the session's name (created on first use, as a python session)"`
	Files   []InputFile `json:"files" jsonschema:"the files to write into the session's workspace (/work)"`
}

// FileRef is a file of a session's workspace.
type FileRef struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Size int64  `json:"size"`
	// URI reads the file as a resource.
	URI        string `json:"uri"`
	LinkTarget string `json:"link_target,omitempty"`
}

// FilesResult lists files: those written (files_upload) or there
// (files_list).
type FilesResult struct {
	Session string    `json:"session"`
	Files   []FileRef `json:"files"`
	// Truncated is set when the workspace holds more entries than listed.
	Truncated bool `json:"truncated,omitempty"`
}

// FilesReadInput is files_read's input.
type FilesReadInput struct {
	Session string `json:"session" jsonschema:"the session's name"`
	Path    string `json:"path" jsonschema:"the file's path in the workspace, relative to /work"`
}

// FileRead is files_read's structured result; the content is in the
// result's embedded resource (and, for a PNG, an image).
type FileRead struct {
	Session  string `json:"session"`
	Path     string `json:"path"`
	URI      string `json:"uri"`
	MIMEType string `json:"mime_type"`
	Size     int    `json:"size"`
	// Truncated is set when the file is larger than what came back.
	Truncated bool `json:"truncated,omitempty"`
}

func (t *tenant) addFileTools() {
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "files_upload",
		Title:       "Upload files to a session",
		Description: "Write files (text, or base64 for binary files) into a session's workspace, /work, where its code reads them by relative path. Creates the session on first use.",
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.filesUpload)
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "files_list",
		Title:       "List a session's files",
		Description: "List the files in a session's workspace (/work): path, kind, size, and a resource link to read each.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.filesList)
	sdk.AddTool(t.server, &sdk.Tool{
		Name:        "files_read",
		Title:       "Read a session's file",
		Description: "Read a file from a session's workspace: text comes back as text, other files as an embedded resource (a PNG also as an image). Symbolic links are not followed.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.filesRead)
}

func (t *tenant) filesUpload(ctx context.Context, _ *sdk.CallToolRequest, in FilesUploadInput) (*sdk.CallToolResult, *FilesResult, error) {
	if len(in.Files) == 0 {
		return nil, nil, fmt.Errorf("no files to upload")
	}
	type upload struct {
		path string
		data []byte
	}
	var ups []upload
	for _, f := range in.Files {
		p, err := sandbox.CleanPath(f.Path)
		if err != nil {
			return nil, nil, err
		}
		b, err := f.bytes()
		if err != nil {
			return nil, nil, err
		}
		ups = append(ups, upload{p, b})
	}
	o, err := t.open(ctx, in.Session, "", true)
	if err != nil {
		return nil, nil, err
	}
	res := &FilesResult{Session: in.Session}
	out := &sdk.CallToolResult{}
	var b strings.Builder
	for _, u := range ups {
		if err := o.s.Upload(u.path, u.data, 0o644); err != nil {
			return nil, nil, err
		}
		uri := sessionFileURI(o.s.ID(), u.path)
		res.Files = append(res.Files, FileRef{Path: u.path, Kind: string(sandbox.KindFile), Size: int64(len(u.data)), URI: uri})
		size := int64(len(u.data))
		out.Content = append(out.Content, &sdk.ResourceLink{URI: uri, Name: u.path, MIMEType: mimeOf(u.path, u.data), Size: &size})
		fmt.Fprintf(&b, "wrote /work/%s (%d bytes)\n", u.path, len(u.data))
	}
	if o.created {
		fmt.Fprintf(&b, "(session %q was created)\n", in.Session)
	}
	out.Content = append([]sdk.Content{&sdk.TextContent{Text: strings.TrimRight(b.String(), "\n")}}, out.Content...)
	return out, res, nil
}

func (t *tenant) filesList(ctx context.Context, _ *sdk.CallToolRequest, in SessionInput) (*sdk.CallToolResult, *FilesResult, error) {
	o, err := t.open(ctx, in.Session, "", false)
	if err != nil {
		return nil, nil, fmt.Errorf("session %q: %w", in.Session, err)
	}
	files, truncated, err := o.s.Files()
	if err != nil {
		return nil, nil, err
	}
	res := &FilesResult{Session: in.Session, Files: []FileRef{}, Truncated: truncated}
	out := &sdk.CallToolResult{}
	var b strings.Builder
	for _, f := range files {
		uri := sessionFileURI(o.s.ID(), f.Path)
		res.Files = append(res.Files, FileRef{Path: f.Path, Kind: string(f.Kind), Size: f.Size, URI: uri, LinkTarget: f.LinkTarget})
		fmt.Fprintf(&b, "%s\t%s\t%d", f.Path, f.Kind, f.Size)
		if f.LinkTarget != "" {
			fmt.Fprintf(&b, "\t-> %s", f.LinkTarget)
		}
		b.WriteString("\n")
		if f.Kind == sandbox.KindFile {
			size := f.Size
			out.Content = append(out.Content, &sdk.ResourceLink{URI: uri, Name: f.Path, MIMEType: mimeOf(f.Path, nil), Size: &size})
		}
	}
	if len(files) == 0 {
		b.WriteString("the workspace is empty\n")
	}
	if truncated {
		b.WriteString("(more files than listed)\n")
	}
	out.Content = append([]sdk.Content{&sdk.TextContent{Text: strings.TrimRight(b.String(), "\n")}}, out.Content...)
	return out, res, nil
}

func (t *tenant) filesRead(ctx context.Context, _ *sdk.CallToolRequest, in FilesReadInput) (*sdk.CallToolResult, *FileRead, error) {
	p, err := sandbox.CleanPath(in.Path)
	if err != nil {
		return nil, nil, err
	}
	o, err := t.open(ctx, in.Session, "", false)
	if err != nil {
		return nil, nil, fmt.Errorf("session %q: %w", in.Session, err)
	}
	data, truncated, err := o.s.Download(p, maxRead)
	if err != nil {
		return nil, nil, err
	}
	uri := sessionFileURI(o.s.ID(), p)
	r := &FileRead{Session: in.Session, Path: p, URI: uri, MIMEType: mimeOf(p, data), Size: len(data), Truncated: truncated}
	out := &sdk.CallToolResult{}
	if isText(data) && !strings.HasPrefix(r.MIMEType, "image/") {
		out.Content = append(out.Content, &sdk.TextContent{Text: string(data)})
	}
	out.Content = append(out.Content, fileContent(uri, p, data)...)
	if truncated {
		out.Content = append(out.Content, &sdk.TextContent{Text: fmt.Sprintf("(only the first %d bytes of %s)", len(data), p)})
	}
	return out, r, nil
}
