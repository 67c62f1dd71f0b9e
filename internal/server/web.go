package server

import (
	"embed"
	"io/fs"
	"net/http"
)

// The page is three static files embedded in the binary: web/index.html, web/app.js and
// web/style.css. It holds no data; app.js reads everything from the JSON API with the
// key the user pastes.

//go:embed web
var webFS embed.FS

// pageCSP keeps the page to its own scripts and styles.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

func (s *Server) routePage(allow map[string][]string) {
	sub, _ := fs.Sub(webFS, "web") // cannot fail: "web" is embedded
	files := http.FileServerFS(sub)
	page := func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Security-Policy", pageCSP)
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.ServeFileFS(w, r, sub, "index.html")
		return nil
	}
	static := func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("file")
		if name != "app.js" && name != "style.css" {
			return errorf(http.StatusNotFound, "no such file: /static/%s", name)
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
		return nil
	}
	s.route("GET /{$}", page, allow)
	s.route("GET /static/{file}", static, allow)
}
