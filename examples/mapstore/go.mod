module github.com/steadhq/stead/examples/mapstore

go 1.26.0

require github.com/steadhq/stead v0.0.0

replace github.com/steadhq/stead => ../..
