module github.com/agentgraph/agentgraph/bench

go 1.26.0

replace github.com/agentgraph/agentgraph => ../

require (
	github.com/cloudwego/eino v0.9.21 // indirect
	github.com/smallnest/langgraphgo v0.8.5 // indirect
)
