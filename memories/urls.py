from django.urls import path

from memories import apis
from memories.ltm import apis as ltm_apis
from memories.recall import apis as recall_apis

app_name = "memories"
urlpatterns = [
    path("memories/proposals", apis.ProposalSubmitApi.as_view(), name="proposals"),
    path("memories/stm", apis.StmListApi.as_view(), name="stm"),
    path("memories/<str:item_id>", apis.MemoryItemApi.as_view(), name="item"),
    path("ltm/cards:import", ltm_apis.CardImportApi.as_view(), name="ltm-import"),
    path("ltm/cards/<str:memory_id>", ltm_apis.CardDetailApi.as_view(), name="ltm-card"),
    path("ltm/search", ltm_apis.LtmSearchApi.as_view(), name="ltm-search"),
    path("recall", recall_apis.RecallApi.as_view(), name="recall"),
]
