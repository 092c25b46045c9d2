package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/console"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/worker"
)

// The console mounted under /stead/ in a server of one's own, with the machines it may retry.
func ExampleNew() {
	store := memstore.New() // sqlitestore.New or pgstore.New in a real program
	defer store.Close()
	tr := memtransport.New()
	defer tr.Close()
	def, err := chart.SampleOrderFlow()
	if err != nil {
		panic(err)
	}
	eng, err := chart.NewEngine(def, chart.RegisterSampleActions(chart.NewRegistry()))
	if err != nil {
		panic(err)
	}
	c, err := console.New(console.Config{Store: store, Transport: tr, Machines: worker.Machines{eng.DefinitionID(): eng},
		Prefix: "/stead"}) // its links carry the prefix
	if err != nil {
		panic(err)
	}
	defer c.Close() // ends the live streams; call it before http.Server.Shutdown returns

	mux := http.NewServeMux()
	mux.Handle("/stead/", c)
	srv := httptest.NewServer(mux) // http.ListenAndServe("127.0.0.1:8080", mux) in a real program
	defer srv.Close()
	res, err := http.Get(srv.URL + "/stead/")
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	fmt.Println(res.Status, res.Header.Get("Content-Security-Policy") != "")
	// Output: 200 OK true
}
