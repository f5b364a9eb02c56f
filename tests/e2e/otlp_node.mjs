// Sends Vercel AI SDK spans to costtrack's POST /v1/traces (tests/e2e/test_otlp_node.py).
//
// The AI SDK (`ai`, with @ai-sdk/openai pointed at a canned OpenAI on 127.0.0.1) records its
// spans through @ai-sdk/otel into an @opentelemetry/sdk-trace-base provider, whose OTLP/HTTP
// exporter (JSON or protobuf, per EXPORTER) sends them to URL with KEY. Each of RESPONSES (JSON)
// is answered to one generateText call. Prints nothing; the exit code says whether the export
// succeeded.
import http from "node:http";
import { generateText } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { OpenTelemetry } from "@ai-sdk/otel";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";

const responses = JSON.parse(process.env.RESPONSES);
let next = 0;
const canned = http.createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    const body = JSON.stringify(responses[next++]);
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    response.end(body);
  });
});
await new Promise((resolve) => canned.listen(0, "127.0.0.1", resolve));

const Exporter = process.env.EXPORTER === "proto" ? ProtoExporter : JsonExporter;
const exporter = new Exporter({
  url: `${process.env.URL}/v1/traces`,
  headers: { Authorization: `Bearer ${process.env.KEY}` },
  compression: process.env.EXPORTER === "proto" ? "gzip" : "none",
});
let exported = true;
const watched = {
  export(spans, done) {
    exporter.export(spans, (result) => {
      if (result.code !== 0) exported = false;
      done(result);
    });
  },
  shutdown: () => exporter.shutdown(),
  forceFlush: () => exporter.forceFlush?.(),
};
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ "service.name": "otlp-node-e2e", "costtrack.feature": "support" }),
  spanProcessors: [new BatchSpanProcessor(watched)],
});
const telemetry = new OpenTelemetry({ tracer: provider.getTracer("ai") });

const { port } = canned.address();
const openai = createOpenAI({ apiKey: "sk-test", baseURL: `http://127.0.0.1:${port}/v1` });
try {
  for (const canned of responses) {
    const model = canned.model.slice(0, canned.model.indexOf("-20"));
    await generateText({
      model: openai.chat(model),
      prompt: "Where is Paris?",
      experimental_telemetry: { isEnabled: true, functionId: "support", integrations: [telemetry] },
    });
  }
} finally {
  canned.close();
  await provider.forceFlush();
  await provider.shutdown();
}
process.exitCode = exported ? 0 : 1;
