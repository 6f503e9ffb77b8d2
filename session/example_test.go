package session_test

import (
	"context"
	"fmt"
	"log"

	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/session"
)

// A session keeps state between cells and returns Jupyter-shaped outputs.
func Example() {
	rt, err := linux.New(linux.Options{}) // needs root
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	s, err := session.New(ctx, rt, session.Config{Preload: []string{"pandas"}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	s.Execute(ctx, session.Exec{Code: "df = pd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3, 19]})"})
	cell, err := s.Execute(ctx, session.Exec{
		Code:     "print(df.temp.mean())\ndf",
		OnOutput: func(o session.Output) { fmt.Println("got", o.Type) },
	})
	if err != nil {
		log.Fatal(err) // the cell could not run at all
	}
	fmt.Println(cell.Status, cell.Stdout())
	fmt.Println(cell.Result().Data.Text("text/html") != "")
}
