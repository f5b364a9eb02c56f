// The Node SDK's public API as JSON, read by the TypeScript compiler from its source: every name
// each package entry point exports, with its declaration's signature and its TSDoc comment.
// Usage: node node_api.mjs SDK_DIR  (SDK_DIR/node_modules holds the SDK's own typescript).
import { createRequire } from "node:module";
import path from "node:path";

const sdk = path.resolve(process.argv[2]);
const ts = createRequire(path.join(sdk, "package.json"))("typescript");
const pkg = createRequire(path.join(sdk, "package.json"))("./package.json");

// "./dist/esm/ai-sdk.d.ts" -> "src/ai-sdk.ts": the exports map names the built files.
const entries = Object.entries(pkg.exports)
  .filter(([, target]) => typeof target === "object")
  .map(([name, target]) => ({
    name: name === "." ? pkg.name : `${pkg.name}/${name.slice(2)}`,
    file: path.join(sdk, target.import.types.replace(/^\.\/dist\/esm\//, "src/").replace(/\.d\.ts$/, ".ts")),
  }));

const program = ts.createProgram(
  entries.map((e) => e.file),
  { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, strict: true },
);
const checker = program.getTypeChecker();

const KINDS = [
  [ts.SyntaxKind.ClassDeclaration, "class"],
  [ts.SyntaxKind.InterfaceDeclaration, "interface"],
  [ts.SyntaxKind.TypeAliasDeclaration, "type"],
  [ts.SyntaxKind.FunctionDeclaration, "function"],
  [ts.SyntaxKind.VariableDeclaration, "const"],
  [ts.SyntaxKind.EnumDeclaration, "enum"],
];

function signature(decl) {
  const source = decl.getSourceFile();
  if (ts.isVariableDeclaration(decl)) {
    return `const ${decl.name.getText(source)}: ${checker.typeToString(checker.getTypeAtLocation(decl))}`;
  }
  if (ts.isFunctionDeclaration(decl) || ts.isMethodDeclaration(decl) || ts.isConstructorDeclaration(decl)) {
    const text = decl.getText(source);
    return (decl.body ? text.slice(0, decl.body.getStart(source) - decl.getStart(source)) : text).trim().replace(/^export\s+/, "");
  }
  if (ts.isClassDeclaration(decl)) {
    return `class ${decl.name?.getText(source) ?? "default"}`;
  }
  return decl.getText(source).replace(/^export\s+/, "");
}

function doc(symbol) {
  const text = ts.displayPartsToString(symbol.getDocumentationComment(checker));
  const tags = symbol.getJsDocTags(checker).map((t) => `@${t.name} ${ts.displayPartsToString(t.text ?? [])}`.trim());
  return { text, tags };
}

function members(decl, symbol) {
  if (!ts.isClassDeclaration(decl)) return [];
  const type = checker.getDeclaredTypeOfSymbol(symbol);
  const found = [];
  const ctor = decl.members.find((m) => ts.isConstructorDeclaration(m));
  if (ctor) found.push({ name: "constructor", signature: signature(ctor), text: "", tags: [] });
  for (const member of type.getProperties()) {
    const d = member.valueDeclaration ?? member.declarations?.[0];
    if (!d || member.name.startsWith("_") || member.name.startsWith("#")) continue;
    const modifiers = ts.getCombinedModifierFlags(d);
    if (modifiers & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue;
    found.push({ name: member.name, signature: signature(d).split("\n")[0], ...doc(member) });
  }
  return found;
}

const out = [];
for (const entry of entries) {
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry.file));
  const names = [];
  for (let symbol of checker.getExportsOfModule(module)) {
    const exported = symbol.name;
    if (symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    const decl = symbol.declarations?.[0];
    if (!decl) continue;
    const kind = KINDS.find(([k]) => decl.kind === k)?.[1] ?? "value";
    names.push({ name: exported, kind, signature: signature(decl), ...doc(symbol), members: members(decl, symbol) });
  }
  names.sort((a, b) => a.name.localeCompare(b.name));
  out.push({ entry: entry.name, names });
}
process.stdout.write(JSON.stringify(out));
