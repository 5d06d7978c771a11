// Creates a thread and streams one run to its end with the official JS SDK; prints each
// stream part as a JSON line ({"event", "data"}), then the thread as a last line.
// Usage: node stream_run.mjs <api url> <api key>
import { Client } from "@langchain/langgraph-sdk";

const [apiUrl, apiKey] = process.argv.slice(2);
const client = new Client({ apiUrl, apiKey });
const thread = await client.threads.create();
const parts = client.runs.stream(thread.thread_id, "plantree-fast", {
  input: { messages: [{ type: "human", content: "What do the sources say?" }] },
  config: { configurable: { max_paths: 1 } },
  streamMode: ["values", "updates", "custom", "messages-tuple"],
});
for await (const part of parts) {
  console.log(JSON.stringify({ event: part.event, data: part.data }));
}
console.log(JSON.stringify({ event: "thread", data: await client.threads.get(thread.thread_id) }));
