"""What every app's tests share: factories of people, teams, links and API
clients (factories.py), click stream entries written as the edge writes
them (streams.py), the accounting forgotten and read (accounting.py), and the pytest fixtures built on them (fixtures.py,
loaded for every test run by pytest.ini). Not part of the product: nothing
outside tests imports it."""
