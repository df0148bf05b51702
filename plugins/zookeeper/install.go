package main

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// install is a java binary and the ZooKeeper jars it runs a replica from.
type install struct {
	java      string   // the java binary, as found
	classpath []string // zookeeper.jar and the logging jars, in -cp order
	deps      []string // the jars zookeeper.jar's manifest adds to the class path
	version   string   // ZooKeeper's version, from the jar
}

// Jars that make ZooKeeper log through log4j 1.2: without them it logs nothing, not even the
// LEADING and FOLLOWING lines that say what a replica became.
var loggingJars = []string{"slf4j-log4j12.jar", "log4j-1.2.jar"}

// serverDeps are the jars of zookeeper.jar's manifest that a server cannot start without.
var serverDeps = []string{"zookeeper-jute.jar", "slf4j-api.jar"}

// zkPomProperties is where Maven records the artifact's version inside zookeeper.jar.
const zkPomProperties = "META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties"

// findInstall locates java and the jars, and reads ZooKeeper's version without starting a JVM.
// Its errors are one line naming what is missing.
func findInstall(c *Config) (*install, error) {
	java, err := exec.LookPath(c.Java)
	if err != nil {
		return nil, fmt.Errorf("java binary %q not found", c.Java)
	}
	jarDir, err := c.jarDir()
	if err != nil {
		return nil, err
	}
	zkJar := filepath.Join(jarDir, "zookeeper.jar")
	manifest, version, err := readJar(zkJar)
	if err != nil {
		return nil, err
	}
	in := &install{java: java, classpath: []string{zkJar}, version: version}
	for _, dep := range manifestClassPath(manifest) {
		if !filepath.IsAbs(dep) {
			dep = filepath.Join(jarDir, dep)
		}
		// The JVM skips a missing Class-Path entry, and most are needed only by features a
		// replica does not use (Debian's manifest names jline.jar, for the CLI, which Debian
		// does not ship): only the server's own dependencies must be there.
		if _, err := os.Stat(dep); err != nil && slices.Contains(serverDeps, filepath.Base(dep)) {
			return nil, fmt.Errorf("%s, which %s needs, not found", dep, zkJar)
		}
		in.deps = append(in.deps, dep)
	}
	for _, name := range loggingJars {
		p := filepath.Join(jarDir, name)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("logging jar %s not found", p)
		}
		in.classpath = append(in.classpath, p)
	}
	return in, nil
}

// readJar returns zookeeper.jar's manifest and the version the jar records.
func readJar(path string) (manifest, version string, err error) {
	zr, err := zip.OpenReader(path)
	if os.IsNotExist(err) {
		return "", "", fmt.Errorf("ZooKeeper jar %s not found", path)
	}
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", path, err)
	}
	defer zr.Close()
	read := func(name string) (string, error) {
		f, err := zr.Open(name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		return string(b), err
	}
	if manifest, err = read("META-INF/MANIFEST.MF"); err != nil {
		return "", "", fmt.Errorf("%s has no manifest: %w", path, err)
	}
	if pom, err := read(zkPomProperties); err == nil {
		version = propertyValue(pom, "version")
	}
	if version == "" {
		version = manifestValue(manifest, "Implementation-Version")
	}
	if version == "" {
		return "", "", fmt.Errorf("%s records no version: is it ZooKeeper's jar?", path)
	}
	return manifest, version, nil
}

// manifestValue returns a main-section attribute of a JAR manifest, whose long values go on
// continuation lines that start with one space.
func manifestValue(manifest, key string) string {
	var value strings.Builder
	in := false
	sc := bufio.NewScanner(strings.NewReader(manifest))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case in && strings.HasPrefix(line, " "):
			value.WriteString(line[1:])
		case in:
			return value.String()
		default:
			if k, v, ok := strings.Cut(line, ": "); ok && strings.EqualFold(k, key) {
				value.WriteString(v)
				in = true
			}
		}
	}
	return value.String()
}

// manifestClassPath lists the jars of the manifest's Class-Path.
func manifestClassPath(manifest string) []string {
	return strings.Fields(manifestValue(manifest, "Class-Path"))
}

// propertyValue returns key's value in a Java properties text.
func propertyValue(props, key string) string {
	for _, line := range strings.Split(props, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
