"""Calls our server's /api/v1/pilot/ methods with panda-server 1.0.4's own HTTP client
(pandaserver/api/v1/http_client.py: the JSON body, the OIDC headers, the envelope read back), run in the peer's
environment. argv[1] is a JSON list of [verb, method, data]; prints the list of (status, answer) as JSON. The
client reads PANDA_API_URL_SSL, PANDA_AUTH, PANDA_AUTH_VO and PANDA_AUTH_ID_TOKEN from the environment."""

import json
import sys

from pandaserver.api.v1.http_client import HttpClient, api_url_ssl


def main() -> None:
    client = HttpClient()
    answers = []
    for verb, method, data in json.loads(sys.argv[1]):
        call = client.get if verb == "GET" else client.post
        answers.append(call(f"{api_url_ssl}/pilot/{method}", data))
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
