package store

import (
	"fmt"
	"strings"
)

// reservedRoot is the first label LangGraph keeps for itself.
const reservedRoot = "langgraph"

// ValidateNamespace reports what is wrong with ns as the namespace of an
// item, in an error wrapping ErrInvalid, or returns nil. Put, Get and Delete
// check it.
func ValidateNamespace(ns []string) error {
	if len(ns) == 0 {
		return fmt.Errorf("%w: the namespace is empty: give at least one label, such as [\"memories\", user id]", ErrInvalid)
	}
	if err := validateLabels("namespace", ns, false); err != nil {
		return err
	}
	if ns[0] == reservedRoot {
		return fmt.Errorf("%w: namespace %q: the first label may not be %q, which LangGraph reserves", ErrInvalid, ns, reservedRoot)
	}
	return nil
}

// ValidatePrefix reports what is wrong with prefix as the namespace prefix
// of a Search, in an error wrapping ErrInvalid, or returns nil. An empty
// prefix is valid and matches every namespace.
func ValidatePrefix(prefix []string) error {
	return validateLabels("namespace prefix", prefix, false)
}

func validateLabels(what string, labels []string, wildcard bool) error {
	for i, l := range labels {
		switch {
		case l == "":
			return fmt.Errorf("%w: %s %q: label %d is empty", ErrInvalid, what, labels, i)
		case wildcard && l == "*":
		case strings.Contains(l, "."):
			return fmt.Errorf("%w: %s %q: label %q contains a \".\", which labels may not", ErrInvalid, what, labels, l)
		}
	}
	return nil
}

// Validate reports what is wrong with o, in an error wrapping ErrInvalid,
// or returns nil.
func (o NamespaceOptions) Validate() error {
	if err := validateLabels("namespace prefix", o.Prefix, true); err != nil {
		return err
	}
	if err := validateLabels("namespace suffix", o.Suffix, true); err != nil {
		return err
	}
	if o.MaxDepth < 0 || o.Limit < 0 || o.Offset < 0 {
		return fmt.Errorf("%w: namespace options max depth %d, limit %d, offset %d: none may be negative", ErrInvalid, o.MaxDepth, o.Limit, o.Offset)
	}
	return nil
}

// Match reports whether ns starts with o.Prefix and ends with o.Suffix,
// "*" in either matching any one label. MaxDepth, Limit and Offset do not
// enter into it.
func (o NamespaceOptions) Match(ns []string) bool {
	if len(ns) < len(o.Prefix) || len(ns) < len(o.Suffix) {
		return false
	}
	for i, p := range o.Prefix {
		if p != "*" && p != ns[i] {
			return false
		}
	}
	off := len(ns) - len(o.Suffix)
	for i, s := range o.Suffix {
		if s != "*" && s != ns[off+i] {
			return false
		}
	}
	return true
}

// truncate returns ns cut to depth labels (0: whole).
func truncate(ns []string, depth int) []string {
	if depth > 0 && len(ns) > depth {
		return ns[:depth]
	}
	return ns
}

// hasPrefix reports whether ns starts with the labels of prefix.
func hasPrefix(ns, prefix []string) bool {
	if len(ns) < len(prefix) {
		return false
	}
	for i, p := range prefix {
		if ns[i] != p {
			return false
		}
	}
	return true
}
