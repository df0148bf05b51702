// Command modulo-plugin-zookeeper is modulo's plugin for ZooKeeper: it realises the Q/C/Z DRM
// on an ensemble of Debian's ZooKeeper servers, each a JVM of its own on 127.0.0.1.
//
// Build it as modulo-plugin-zookeeper (go build -o bin/modulo-plugin-zookeeper
// ./plugins/zookeeper); modulo starts it, and it refuses to run by hand.
package main

import "github.com/modulo-testing/modulo/cem"

func main() { cem.Serve(NewPlugin()) }
