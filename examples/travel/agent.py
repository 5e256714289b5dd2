"""A travel assistant in plain Python: the agent this example evaluates.

It checks forecasts, finds and books flights and converts currencies. There is no LLM inside: a
keyword policy reads each message, calls the tools below through ``session.call_tool`` (so that
``assay eval --mock-tools`` can answer them from the eval set's recorded responses), remembers
what it found in ``session.state`` and asks for whatever is missing. Its world is small and
frozen (today is always 1 May 2027), so the same messages always get the same answers.

    assay eval examples/travel/travel.evalset.json --agent examples/travel/agent.py:travel_agent
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any, NamedTuple

from assay.agents.base import Session, ToolCall, TurnResult

TODAY = date(2027, 5, 1)
CITIES = {"berlin": "BER", "lisbon": "LIS", "paris": "PAR", "london": "LON"}
CITY_NAMES = {code: name.title() for name, code in CITIES.items()}
FORECASTS = {  # city -> (summary, high °C, low °C) for today, tomorrow and the day after
    "Berlin": [("clouds", 15, 6), ("sunshine", 18, 7), ("showers", 13, 6)],
    "Lisbon": [("sunshine", 23, 14), ("sunshine", 24, 15), ("sun and clouds", 22, 14)],
    "Paris": [("clouds", 16, 9), ("light rain", 14, 8), ("sunshine", 19, 10)],
    "London": [("drizzle", 13, 7), ("clouds", 14, 8), ("light rain", 12, 7)],
}
PASSENGERS = {"u-17": "Ada Lovelace"}  # the traveller on each user's profile
EUR_RATES = {"EUR": 1.0, "USD": 1.08, "GBP": 0.85, "JPY": 162.504, "CHF": 0.96}
CURRENCY_WORDS = {
    "EUR": ("eur", "euro", "euros", "€"),
    "USD": ("usd", "dollar", "dollars", "$"),
    "GBP": ("gbp", "pound", "pounds", "sterling", "£"),
    "JPY": ("jpy", "yen", "¥"),
    "CHF": ("chf", "franc", "francs"),
}


class Flight(NamedTuple):
    """A daily flight; ``code`` is the confirmation code the fake booking system issues."""

    id: str
    origin: str
    destination: str
    departs: str
    price: int  # EUR, economy
    stops: int
    code: str


FLIGHTS = [
    Flight("TP551", "BER", "LIS", "07:10", 129, 0, "TK3W9M"),
    Flight("LH1166", "BER", "LIS", "11:20", 99, 1, "LR8D2Q"),
    Flight("FR1234", "BER", "LIS", "18:45", 89, 0, "QX7P2L"),
    Flight("AF1535", "BER", "PAR", "09:30", 119, 0, "AP4N7C"),
    Flight("BA983", "BER", "LON", "13:05", 145, 0, "BW6H3Z"),
    Flight("TP552", "LIS", "BER", "12:25", 135, 0, "TM5R2K"),
]
BY_ID = {flight.id: flight for flight in FLIGHTS}

# --- the tools: plain functions over the data above ------------------------------------------


def get_forecast(city: str, days: int = 0, units: str = "metric") -> dict[str, Any]:
    """The forecast for ``city``, ``days`` days from today, in metric or imperial units."""
    outlook = FORECASTS.get(city, [])
    if not 0 <= days < len(outlook):
        return {"error": f"no forecast for {city} in {days} day(s)"}
    summary, high, low = outlook[days]
    if units == "imperial":
        high, low = round(high * 1.8 + 32), round(low * 1.8 + 32)
    return {"summary": summary, "high": high, "low": low}


def search_flights(
    origin: str, destination: str, date: str, filters: dict[str, Any]
) -> dict[str, Any]:
    """Economy flights between two IATA city codes on an ISO date (``direct_only`` or not)."""
    flights = [
        {"id": f.id, "departs": f.departs, "price": f.price, "currency": "EUR"}
        for f in FLIGHTS
        if (f.origin, f.destination) == (origin, destination)
        and not (filters.get("direct_only") and f.stops)
    ]
    return {"date": date, "flights": flights}


def get_fare(flight_id: str) -> dict[str, Any]:
    """The current economy fare of a flight."""
    if flight_id not in BY_ID:
        return {"error": f"unknown flight {flight_id}"}
    return {"flight_id": flight_id, "price": BY_ID[flight_id].price, "currency": "EUR"}


def book_flight(flight_id: str, passengers: list[dict[str, Any]]) -> dict[str, Any]:
    """Book a flight for ``passengers`` (each a ``name`` and a ``seat``, None for any)."""
    if flight_id not in BY_ID:
        return {"error": f"unknown flight {flight_id}"}
    names = [passenger["name"] for passenger in passengers]
    return {"confirmation": BY_ID[flight_id].code, "flight_id": flight_id, "passengers": names}


def convert_currency(amount: float, **codes: str) -> dict[str, Any]:  # codes: from, to
    """``amount`` converted from currency ``from`` into currency ``to`` (ISO codes)."""
    rate = EUR_RATES[codes["to"]] / EUR_RATES[codes["from"]]
    return {"amount": round(amount * rate, 2), "currency": codes["to"]}


TOOLS: dict[str, Callable[..., Any]] = {
    tool.__name__: tool
    for tool in (get_forecast, search_flights, get_fare, book_flight, convert_currency)
}


def _declare(tool: Callable[..., Any], required: str, **types: str) -> dict[str, Any]:
    """An ADK-style function declaration of ``tool`` (``required``: parameter names, spaced)."""
    properties = {param: {"type": kind} for param, kind in types.items()}
    schema = {"type": "object", "properties": properties, "required": required.split()}
    return {"name": tool.__name__, "description": tool.__doc__, "parameters": schema}


# What the judges are shown of the agent: its instructions and its tools (read by assay).
INSTRUCTIONS = (
    "You are a travel assistant: you check weather forecasts, find and book flights and convert "
    "currencies. Take every fact from a tool; never guess prices, times or rates. Search for "
    "direct economy flights unless asked otherwise, book for the traveller on the user's profile, "
    "ask for anything missing, and answer in one or two sentences."
)
TOOL_DECLARATIONS = [
    _declare(get_forecast, "city", city="string", days="integer", units="string"),
    _declare(search_flights, "origin destination date filters", origin="string",
             destination="string", date="string", filters="object"),
    _declare(get_fare, "flight_id", flight_id="string"),
    _declare(book_flight, "flight_id passengers", flight_id="string", passengers="array"),
    _declare(convert_currency, "amount from to", amount="number",
             **{"from": "string", "to": "string"}),
]  # fmt: skip

# --- the policy: what to do with a message ---------------------------------------------------

HELLO = (
    "Hi! I'm your travel assistant. I can check forecasts, find and book flights, "
    "and convert currencies."
)
_WORDS = {word: code for code, words in CURRENCY_WORDS.items() for word in words}
_CURRENCY = re.compile("|".join(rf"(?<![a-z]){re.escape(w)}(?![a-z])" for w in _WORDS))
_AMOUNT = re.compile(r"\d[\d,]*(?:\.\d+)?")
_MONTHS = {
    name: number
    for number, month in enumerate(["january", "february", "march", "april", "may", "june", "july",
                                    "august", "september", "october", "november", "december"], 1)
    for name in (month, month[:3])
}  # fmt: skip
_DAY_MONTH = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?(?: of)? ([a-z]+)")  # 12 May, 12th of May
_MONTH_DAY = re.compile(r"([a-z]+) (\d{1,2})(?:st|nd|rd|th)?\b")  # May 12, May 12th
_COUNT = ["no", "one", "two", "three", "four", "five", "six"]


def _has(text: str, *patterns: str) -> bool:
    return any(re.search(rf"\b{pattern}\b", text) for pattern in patterns)


def _cities(text: str) -> list[str]:
    """The IATA codes of the cities ``text`` names, in order."""
    return [CITIES[word] for word in re.findall(r"[a-z]+", text) if word in CITIES]


def _date(text: str) -> date | None:
    """The date ``text`` names (``12 May``, ``May 12th``, ``tomorrow``, ``in 2 days``), the
    next one from today."""
    ahead = re.search(r"\bin (\d) days|day after tomorrow|tomorrow|today", text)
    if ahead:
        days = {"today": 0, "tomorrow": 1, "day after tomorrow": 2}.get(ahead[0])
        return TODAY + timedelta(days=int(ahead[1]) if days is None else days)
    named = [(m.start(), m[1], m[2]) for m in _DAY_MONTH.finditer(text)]
    named += [(m.start(), m[2], m[1]) for m in _MONTH_DAY.finditer(text)]
    for _, day, month in sorted(named):
        if month not in _MONTHS:
            continue
        try:
            found = date(TODAY.year, _MONTHS[month], int(day))
        except ValueError:  # 31 June
            continue
        return found if found >= TODAY else found.replace(year=TODAY.year + 1)
    return None


def _route(text: str, trip: dict[str, str]) -> dict[str, str]:
    """``trip`` (origin, destination, date) completed from ``text``: ``from X``, ``to Y``, or
    the cities in the order named, then the date."""
    trip = dict(trip)
    for slot, word in (("origin", "from"), ("destination", "to")):
        named = [CITIES[w] for w in re.findall(rf"\b{word} ([a-z]+)", text) if w in CITIES]
        if named:
            trip[slot] = named[0]
    for code in _cities(text):
        free = [slot for slot in ("origin", "destination") if slot not in trip]
        if free and code not in trip.values():
            trip[free[0]] = code
    when = _date(text)
    return {**trip, "date": when.isoformat()} if when else trip


def _day(when: date | str) -> str:
    when = date.fromisoformat(when) if isinstance(when, str) else when
    return f"{when.day} {when:%B}"


def _money(amount: float, currency: str) -> str:
    whole = currency == "JPY" or amount == int(amount)
    return f"{amount:,.0f} {currency}" if whole else f"{amount:,.2f} {currency}"


def _source_and_target(named: list[re.Match[str]], amount: re.Match[str]) -> tuple[str, str]:
    """The currency written next to the amount is the one to convert from; another, the target."""
    nearest = min(named, key=lambda m: max(m.start() - amount.end(), amount.start() - m.end()))
    source = _WORDS[nearest[0]]
    return source, next(_WORDS[m[0]] for m in named if _WORDS[m[0]] != source)


def _listing(flights: list[dict[str, Any]], joiner: str) -> str:
    return joiner.join(
        f"{f['id']} at {f['departs']} for {f['price']} {f['currency']}" for f in flights
    )


class _Turn:
    """One turn: the message (lower-cased), the session, and the tool calls made so far."""

    def __init__(self, message: str, session: Session) -> None:
        self.text = " ".join(message.lower().split())
        self.session = session
        self.state = session.state
        self.pending = self.state.pop("pending", None)  # what the last answer asked about
        self.calls: list[ToolCall] = []

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run a tool through the session: the real function, or a recorded answer."""
        response = await self.session.call_tool(name, args, TOOLS[name])
        self.calls.append(ToolCall(name=name, args=args, response=response))
        return response if isinstance(response, dict) else {"error": "no answer"}

    async def reply(self) -> str:
        """Answer the first request the message makes, else go on with the pending one."""
        text, pending = self.text, self.pending
        if _has(text, "book", "reserve"):
            return await self.book()
        if _has(text, "flights?", "fly", "flying"):
            return await self.search()
        if _CURRENCY.search(text) and (
            _AMOUNT.search(text) or _has(text, "that", "it", "price", "fare", "cost")
        ):
            return await self.convert()
        if _has(text, "weather", "forecast", "rain", "sunny", "temperature"):
            return await self.forecast()
        if _has(text, "hi", "hello", "hey", "who are you", "what can you do", "help"):
            return HELLO
        if _has(text, "bye", "goodbye", "thanks", "thank you", "that's all", "that is all"):
            return "You're welcome! Have a great trip."
        handlers = {"forecast": self.forecast, "search": self.search, "book": self.book}
        if pending in handlers:
            return await handlers[pending]()
        return (
            "Sorry, I did not understand that. I can check forecasts, find and book flights, "
            "and convert currencies: what would you like to do?"
        )

    async def forecast(self) -> str:
        """The forecast for the city named, today unless another day is."""
        cities = _cities(self.text)
        if not cities:
            self.state["pending"] = "forecast"
            return f"Which city would you like the forecast for? I know {', '.join(FORECASTS)}."
        city, when = CITY_NAMES[cities[0]], _date(self.text) or TODAY
        units = "imperial" if "fahrenheit" in self.text else self.state.get("units", "metric")
        days = (when - TODAY).days
        found = await self.call("get_forecast", {"city": city, "days": days, "units": units})
        day = {0: "Today", 1: "Tomorrow"}.get(days, f"On {_day(when)}")
        if "error" in found:
            return f"Sorry, I have no forecast for {city} on {_day(when)}."
        unit = "°F" if units == "imperial" else "°C"
        high, low = f"{found['high']}{unit}", f"{found['low']}{unit}"
        return (
            f"{day} in {city} expect {found['summary']}, with a high of {high} and a low of {low}."
        )

    async def search(self) -> str:
        """Search once origin, destination and date are known (over one or more messages)."""
        known = self.state.get("trip", {}) if self.pending == "search" else {}
        trip = self.state["trip"] = _route(self.text, known)
        self.state.pop("flights", None)
        needs = {"origin": "where from", "destination": "where to", "date": "on which date"}
        missing = [what for slot, what in needs.items() if slot not in trip]
        if missing:
            self.state["pending"] = "search"
            return f"Happy to search for flights: please tell me {' and '.join(missing)}."
        direct = not _has(self.text, "stops?", "connecting", "indirect")
        args = {**trip, "filters": {"direct_only": direct, "cabin": "economy"}}
        found = await self.call("search_flights", args)
        if "error" in found:
            return "Sorry, the flight search is not answering. Please try again later."
        flights = self.state["flights"] = found.get("flights", [])
        origin, destination = CITY_NAMES[trip["origin"]], CITY_NAMES[trip["destination"]]
        what = f"{'direct ' if direct else ''}flight{'s' if len(flights) != 1 else ''}"
        route = f"from {origin} to {destination} on {_day(trip['date'])}"
        if not flights:
            self.state["pending"] = "search"  # a new date (or route) completes this trip
            return f"I found no {what} {route}. Would you like to try another date?"
        return (
            f"I found {_COUNT[min(len(flights), 6)]} {what} {route}: {_listing(flights, ' and ')}."
        )

    def _choose(self, flights: list[dict[str, Any]]) -> dict[str, Any] | None:
        named = [f for f in flights if f["id"].lower() in self.text]
        if named or len(flights) == 1:
            return (named or flights)[0]
        if _has(self.text, "cheapest", "cheaper", "lowest", "least expensive"):
            return min(flights, key=lambda f: f["price"])
        if _has(self.text, "earliest", "first", "morning"):
            return flights[0]
        return flights[-1] if _has(self.text, "latest", "last", "evening") else None

    async def book(self) -> str:
        """Book the flight the user picks from the last search (searching first if needed)."""
        if _cities(self.text) or not self.state.get("flights"):
            answer = await self.search()
            if not self.state.get("flights"):
                return answer
        chosen = self._choose(self.state["flights"])
        if chosen is None:
            self.state["pending"] = "book"
            return f"Which one shall I book: {_listing(self.state['flights'], ' or ')}?"
        name = PASSENGERS.get(self.session.user_id)
        if name is None:
            return "Sorry, I can only book for travellers with a saved profile."
        fare = await self.call("get_fare", {"flight_id": chosen["id"]})
        passengers = [{"name": name, "seat": None}]
        booked = await self.call(
            "book_flight", {"flight_id": chosen["id"], "passengers": passengers}
        )
        if "error" in fare or "error" in booked:
            return f"Sorry, I could not book {chosen['id']}. Please try again later."
        self.state["price"] = {"amount": fare["price"], "currency": fare["currency"]}
        trip = self.state["trip"]
        route = f"from {CITY_NAMES[trip['origin']]} to {CITY_NAMES[trip['destination']]}"
        when = f"on {_day(trip['date'])} at {chosen['departs']}"
        price = f"{fare['price']} {fare['currency']}"
        return (
            f"Done: {chosen['id']} {route} {when} is booked for {price}. "
            f"Your confirmation code is {booked['confirmation']}."
        )

    async def convert(self) -> str:
        """Convert the amount named, or the last fare, into the currency named."""
        named, fare = list(_CURRENCY.finditer(self.text)), self.state.get("price")
        codes = [_WORDS[match[0]] for match in named]
        amount_text = _AMOUNT.search(self.text)
        if amount_text and len(set(codes)) >= 2:
            source, target = _source_and_target(named, amount_text)
            amount = float(amount_text[0].replace(",", ""))
        elif fare and codes:
            amount, source, target = fare["amount"], fare["currency"], codes[-1]
        else:
            return "How much would you like to convert, from which currency and into which?"
        number = int(amount) if amount == int(amount) else amount
        args = {"amount": number, "from": source, "to": target}
        found = await self.call("convert_currency", args)
        if "error" in found:
            return "Sorry, I could not reach the exchange-rate service. Please try again later."
        return (
            f"{_money(number, source)} is about {_money(found['amount'], target)} at today's rate."
        )


async def travel_agent(message: str, session: Session) -> TurnResult:
    """Answer one user message (assay calls this once per turn, with the case's session)."""
    turn = _Turn(message, session)
    answer = await turn.reply()
    return TurnResult(final_response=answer, tool_calls=turn.calls)


# assay reads these attributes: the agent's name (the author of its events), and what the judges
# are shown of it.
travel_agent.__dict__.update(
    name="travel_assistant", instructions=INSTRUCTIONS, tool_declarations=TOOL_DECLARATIONS
)
