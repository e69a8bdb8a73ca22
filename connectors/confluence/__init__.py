"""Confluence, read three ways: an HTML space export, an XML space export (each a folder or the
.zip Confluence wrote), and a Cloud or Data Center site over REST.

- the connectors: `html_export` (`ConfluenceHtmlExport`), `xml_export` (`ConfluenceXmlExport`),
  `rest` (`ConfluenceRest`);
- what the exports share: `common` (reading an export folder or .zip safely, HTML → Markdown) and
  `storage` (the storage format of the XML export and of REST → that HTML);
- what REST stands on: `config` (`ConfluenceRemote`, the settings it is told), `api` (the client:
  one retry layer, the sync's budget), `http_request` (one request under a deadline and a byte
  cap), `links` (where a server-given link may go, which ids are ids), `listing` (a listing entry
  read fail-closed) and `v2` (Cloud's full reads).

Which of them reads a source is said once, in `connectors.registry`.
"""
