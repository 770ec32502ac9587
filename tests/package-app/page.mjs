// The app's page for bundlers that do not process HTML (Vite's is index.html).
export const page = (script) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>siltdb in an app</title>
  <link rel="icon" href="data:,">
  ${script}
</head>
<body data-state="loading"><pre id="out"></pre></body>
</html>
`;
