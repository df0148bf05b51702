// Command mongodb is modulo's MongoDB plugin (built as modulo-plugin-mongodb): it realises the
// DRM Q/C/M on a replica set of mongod processes that it starts on 127.0.0.1, driven by the
// executor over the plugin protocol of package cem. No mongod comes with it: it uses the one
// the configuration, $MODULO_MONGOD or PATH names (MongoDB 4.4.2 or later).
package main

import "github.com/modulo-testing/modulo/cem"

func main() { cem.Serve(New()) }
